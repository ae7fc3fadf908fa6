// Plan mode: the plan of each round drawn as a live ordered list of steps. A step shows its status,
// its task, the model and tool it was planned for, the tool cards of its calls, and its result
// (collapsible). A re-plan starts a new round under a separator that says why.
//
// Events (the `plan` channel): {type: "dag", round, steps: [{id, task, dependencies, tool_hint,
// model_hint, status}]}, {type: "step", round, step_id, status, result?, error?, elapsed?} and
// {type: "step_iteration", round, step_id, ...the step agent's iteration event without its type}. The `phase` channel says
// planning, executing, analyzing or replanning (with the analyzer's reasoning).

import { ToolCard } from "./chat-cards.js";
import { el } from "./chat-dom.js";
import { formatDuration, gettext, interpolate } from "./chat-i18n.js";
import { renderMarkdown } from "./chat-markdown.js";

const LONG_RESULT_CHARS = 600;

function statusLabel(status) {
  switch (status) {
    case "pending":
      return gettext("Waiting");
    case "running":
      return gettext("Running");
    case "done":
      return gettext("Done");
    case "failed":
      return gettext("Failed");
    case "skipped":
      return gettext("Skipped");
    case "cancelled":
      return gettext("Cancelled");
    case "stopped":
      return gettext("Not finished");
    default:
      return status || "";
  }
}

function badgeKind(status) {
  return { running: "running", done: "ok", failed: "err" }[status] || "muted";
}


export function phaseStatus(phase) {
  switch (phase) {
    case "planning":
      return gettext("Planning…");
    case "executing":
      return gettext("Running the plan…");
    case "analyzing":
      return gettext("Checking the results…");
    case "replanning":
      return gettext("Planning again…");
    default:
      return null;
  }
}

class PlanStep {
  constructor(spec, index) {
    this.id = String(spec.id);
    this.cards = [];
    this.status = "";
    this.number = el("span", { class: "plan-step-number", text: String(index + 1) });
    this.badge = el("span", { class: "badge" });
    this.time = el("span", { class: "plan-step-time muted" });
    const meta = el("div", { class: "plan-step-meta muted" });
    if (spec.model_hint) meta.append(el("span", { class: "plan-step-model", text: interpolate(gettext("model: %s"), [spec.model_hint]) }));
    if (spec.tool_hint) meta.append(el("span", { class: "plan-step-tool" }, gettext("tool:"), " ", el("code", { text: spec.tool_hint })));
    const deps = Array.isArray(spec.dependencies) ? spec.dependencies.map(String) : [];
    this.dependencies = deps;
    this.depsEl = el("span", { class: "plan-step-deps" });
    meta.append(this.depsEl);
    this.tools = el("ol", { class: "steps plan-step-tools" });
    this.resultBox = el("div", { class: "plan-step-result", hidden: true });
    this.errorBox = el("p", { class: "plan-step-error", role: "alert", hidden: true });
    this.el = el(
      "li",
      { class: "plan-step", dataset: { stepId: this.id } },
      el("div", { class: "plan-step-head" }, this.number, el("span", { class: "plan-step-task", text: spec.task || "" }), this.badge, this.time),
      meta,
      this.tools,
      this.errorBox,
      this.resultBox,
    );
    this.setStatus(spec.status || "pending");
  }

  // Dependencies are shown by step number once every step of the round is known.
  numberDependencies(numbers) {
    const names = this.dependencies.map((id) => numbers.get(id) || id);
    this.depsEl.textContent = names.length ? interpolate(gettext("after step %s"), [names.join(", ")]) : "";
  }

  setStatus(status) {
    if (!status || status === this.status) return;
    this.status = status;
    this.el.dataset.status = status;
    this.badge.className = `badge ${badgeKind(status)}`;
    this.badge.textContent = statusLabel(status);
  }

  update(data) {
    this.setStatus(data.status);
    if (data.elapsed != null) this.time.textContent = formatDuration(data.elapsed);
    if (data.error) {
      this.errorBox.textContent = String(data.error);
      this.errorBox.hidden = false;
    }
    if (typeof data.result === "string" && data.result) this.showResult(data.result);
  }

  showResult(text) {
    const body = el("div", { class: "md plan-step-result-text" });
    body.innerHTML = renderMarkdown(text);
    const details = el("details", {}, el("summary", { text: gettext("Result") }), body);
    details.open = text.length <= LONG_RESULT_CHARS && this.status === "done";
    this.resultBox.replaceChildren(details);
    this.resultBox.hidden = false;
  }

  findCard(data, runningOnly = false) {
    const id = data.tool_call_id;
    for (let i = this.cards.length - 1; i >= 0; i -= 1) {
      const card = this.cards[i];
      if (runningOnly && !card.running) continue;
      if (id ? card.toolCallId === id : card.toolName === data.tool_name) return card;
    }
    return null;
  }

  addCard(data) {
    const card = new ToolCard({ toolName: data.tool_name, toolArgs: data.tool_args, toolCallId: data.tool_call_id, iteration: data.iteration });
    this.cards.push(card);
    this.tools.append(card.el);
    return card;
  }

  // A step_iteration payload (the step agent's iteration event, flat); returns the status line to show.
  iteration(event) {
    if (!event.tool_name && !event.tool_call_id) return null;
    if (event.status === "start") {
      this.addCard(event);
      return interpolate(gettext("Calling %s…"), [event.tool_name]);
    }
    if (event.status === "done") {
      (this.findCard(event, true) || this.findCard(event) || this.addCard(event)).finish(event);
    }
    return null;
  }

  stop() {
    if (this.status === "running" || this.status === "pending") this.setStatus("stopped");
    for (const card of this.cards) {
      if (!card.running) continue;
      card.running = false;
      card.el.classList.remove("running", "awaiting-approval");
      card.el.classList.add("stopped");
      card.setBadge("muted", gettext("Not finished"));
    }
  }
}

class PlanRound {
  constructor(data) {
    this.round = Number(data.round) || 1;
    this.steps = new Map();
    this.list = el("ol", { class: "plan-steps" });
    const title = this.round > 1 ? interpolate(gettext("Plan, round %s"), [this.round]) : gettext("Plan");
    this.el = el(
      "li",
      { class: "step plan-round", dataset: { round: String(this.round) } },
      el("div", { class: "plan-round-head" }, el("span", { class: "plan-icon", "aria-hidden": "true" }), el("strong", { text: title })),
      this.list,
    );
    const numbers = new Map();
    (Array.isArray(data.steps) ? data.steps : []).forEach((spec, index) => {
      const step = new PlanStep(spec, index);
      this.steps.set(step.id, step);
      numbers.set(step.id, String(index + 1));
      this.list.append(step.el);
    });
    for (const step of this.steps.values()) step.numberDependencies(numbers);
  }

  stepFor(id) {
    return this.steps.get(String(id)) || null;
  }
}

export class PlanView {
  // addStep(node): appends a node to the turn's list of steps, in arrival order.
  constructor({ addStep }) {
    this.addStep = addStep;
    this.rounds = new Map();
    this.current = null;
  }

  roundFor(round) {
    if (round != null && this.rounds.has(Number(round))) return this.rounds.get(Number(round));
    return this.current;
  }

  // A `plan` event; returns the status line to show, if any.
  handle(data) {
    if (data.type === "dag") {
      const round = new PlanRound(data);
      this.rounds.set(round.round, round);
      this.current = round;
      this.addStep(round.el);
      return gettext("Running the plan…");
    }
    const step = this.roundFor(data.round)?.stepFor(data.step_id);
    if (!step) return null;
    if (data.type === "step") {
      step.update(data);
      if (data.status === "running") return interpolate(gettext("Working on step %s…"), [step.number.textContent]);
      return null;
    }
    if (data.type === "step_iteration") return step.iteration(data);
    return null;
  }

  // The analyzer asked for another round: say why before the new plan appears.
  replanning(data) {
    const children = [el("span", { class: "plan-replan-title", text: gettext("Not done yet: planning again") })];
    if (data.reasoning) children.push(el("p", { class: "plan-replan-reason muted", text: String(data.reasoning) }));
    this.addStep(el("li", { class: "step plan-replan" }, ...children));
  }

  // An approval of a tool call made inside a step. Returns false when no step made that call.
  approval(data) {
    let card = null;
    const round = this.roundFor(data.plan_round);
    if (round && data.plan_step_id != null) card = round.stepFor(data.plan_step_id)?.findCard(data);
    if (!card && round && data.tool_call_id) {
      for (const step of round.steps.values()) {
        card = step.findCard(data, true);
        if (card) break;
      }
    }
    if (!card) return false;
    card.approval(data);
    return true;
  }

  stepCount() {
    let count = 0;
    for (const round of this.rounds.values()) count += round.steps.size;
    return count;
  }

  stop() {
    for (const round of this.rounds.values()) for (const step of round.steps.values()) step.stop();
  }
}
