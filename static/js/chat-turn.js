// One turn of the conversation: the user's message and the run that answers it (its steps, the
// streamed answer and the footer). The Timeline routes each event of a run to its Turn.

import { attachmentList } from "./chat-attachments.js";
import { ToolCard } from "./chat-cards.js";
import { Citations } from "./chat-citations.js";
import { collapseLongText, el } from "./chat-dom.js";
import { formatDuration, formatNumber, gettext, interpolate, ngettext } from "./chat-i18n.js";
import { renderMarkdown } from "./chat-markdown.js";
import { PlanView, phaseStatus } from "./chat-plan.js";
import { INTERRUPTED_CODE, InterruptNotice } from "./chat-resume.js";

function stopNote(reason) {
  switch (reason) {
    case "max_iterations":
      return gettext("The agent reached its step limit; this answer summarises what it found.");
    case "token_budget":
      return gettext("The agent reached its token budget; this answer summarises what it found.");
    case "llm_error":
      return gettext("The model stopped responding; this answer summarises what the agent found.");
    case "unparsed_output":
    case "empty_response":
      return gettext("The model's reply could not be used; this answer summarises what the agent found.");
    case "max_rounds":
      return gettext("The plan used all its rounds; this answer summarises what it found.");
    case "planning_failed":
      return gettext("No new plan could be made; this answer summarises what the agent found.");
    case "error":
      return gettext("The run failed.");
    default:
      return "";
  }
}

export class Turn {
  // runId may be null for a message just sent (bound to its run by the first event that arrives).
  // onContinue(runId): ask the server to resume this turn's interrupted run.
  constructor({ runId = null, content = null, ended = false, onChange, onResend, onContinue }) {
    this.runId = runId;
    this.ended = ended;
    this.done = false;
    this.working = false;
    this.onChange = onChange;
    this.onResend = onResend;
    this.onContinue = onContinue;
    this.notice = null; // the InterruptNotice of the run's latest interruption, until a later event retires it
    this.cards = [];
    this.followUps = [];
    this.answerText = "";
    this.answerFromHistory = false;
    this.renderQueued = false;
    this.content = null;
    this.plan = null;
    this.fallbacks = []; // the fallback endpoints that answered a model call of this run, in order

    this.userEl = el("div", { class: "msg user" });
    this.attachments = []; // the files sent with the user's message
    this.filesEl = el("ul", { class: "msg-attachments", hidden: true });
    this.steps = el("ol", { class: "steps" });
    this.statusText = el("span", { class: "run-status-text", text: gettext("Working…") });
    this.status = el("div", { class: "run-status", hidden: true }, el("span", { class: "spinner", "aria-hidden": "true" }), this.statusText);
    this.answer = el("div", { class: "answer md", hidden: true });
    this.citations = new Citations(`turn-${Math.random().toString(36).slice(2, 10)}`);
    this.footer = el("footer", { class: "run-footer muted", hidden: true });
    this.runEl = el("div", { class: "run" }, this.steps, this.answer, this.citations.el, this.status, this.footer);
    this.el = el("li", { class: "turn" }, this.userEl, this.filesEl, this.runEl);
    if (runId) this.el.dataset.runId = runId;
    if (content !== null) this.setUser(content);
    else this.userEl.hidden = true;
  }

  bind(runId) {
    this.runId = runId;
    this.el.dataset.runId = runId;
  }

  setUser(content) {
    this.content = content;
    this.userEl.textContent = content;
    collapseLongText(this.userEl, content);
    this.userEl.hidden = false;
  }

  // The files sent with the user's message, each a download link.
  setAttachments(attachments) {
    this.attachments = Array.isArray(attachments) ? attachments : [];
    const list = attachmentList(this.attachments);
    list.hidden = !this.attachments.length;
    this.filesEl.replaceWith(list);
    this.filesEl = list;
  }

  setWorking(working) {
    this.working = working;
    this.el.classList.toggle("working", working);
    this.status.hidden = !working;
    this.changed();
  }

  setStatus(text) {
    this.statusText.textContent = text;
  }

  changed() {
    this.onChange();
  }

  // A message that the server refused: keep it visible, say so, and return its text.
  markNotSent(reason) {
    this.el.classList.add("not-sent");
    this.setWorking(false);
    this.userEl.append(el("span", { class: "msg-note", text: reason || gettext("Not sent.") }));
    return this.content || "";
  }

  setHistoryAnswer(content) {
    this.answerFromHistory = true;
    this.answerText = content;
    this.renderAnswer();
  }

  // -- events of this turn's run ---------------------------------------------------------------
  handle(event, data) {
    const interruption = event === "error" && data.code === INTERRUPTED_CODE;
    if (this.notice && !interruption) this.continued();
    if (!this.ended && !this.done && event !== "done" && !interruption) this.setWorking(true);
    switch (event) {
      case "step":
        this.onStep(data);
        break;
      case "answer":
        this.onAnswer(data);
        break;
      case "compact":
        this.addStep(el("li", { class: "step divider", text: gettext("Earlier messages were summarised") }));
        break;
      case "phase":
        this.onPhase(data);
        break;
      case "inject":
        this.onFollowUpTaken(data);
        break;
      case "approval":
        this.onApproval(data);
        break;
      case "plan":
        this.onPlan(data);
        break;
      case "error":
        if (interruption) this.onInterrupted(data);
        else this.addStep(el("li", { class: "step run-error", role: "alert", text: data.message || gettext("Something went wrong.") }));
        break;
      case "done":
        this.onDone(data);
        break;
      default:
        return; // future events: ignored until the UI knows them
    }
    this.changed();
  }

  // Steps follow the order of the run's stored events, live and after a reload alike. A follow-up the
  // agent has not read yet has no event: it waits below them all, and moves to its inject event's place
  // once the agent takes it.
  addStep(node) {
    const waiting = this.followUps.find((f) => f.status === "pending");
    this.steps.insertBefore(node, waiting ? waiting.node : null);
  }

  onStep(data) {
    if (data.type === "thinking") {
      if (data.status === "start") this.setStatus(gettext("Thinking…"));
      else if (data.reasoning) {
        this.addStep(
          el(
            "li",
            { class: "step thinking" },
            el("details", {}, el("summary", { text: gettext("Reasoning") }), el("p", { text: data.reasoning })),
          ),
        );
      }
    } else if (data.type === "iteration") {
      if (data.status === "start") {
        const card = new ToolCard({
          toolName: data.tool_name,
          toolArgs: data.tool_args,
          toolCallId: data.tool_call_id,
          iteration: data.iteration,
        });
        this.cards.push(card);
        this.addStep(card.el);
        this.setStatus(interpolate(gettext("Calling %s…"), [data.tool_name]));
      } else if (data.status === "done") {
        const card = this.findCard(data) || this.newCard(data);
        card.finish(data);
        if (Array.isArray(data.citations) && data.citations.length) {
          this.citations.add(data.citations);
          if (this.answerText) this.renderAnswer();
        }
        this.setStatus(gettext("Thinking…"));
      }
    } else if (data.type === "answer" && data.status === "start") {
      this.setStatus(gettext("Writing the answer…"));
    } else if (data.type === "fallback" && data.endpoint && !this.fallbacks.includes(data.endpoint)) {
      this.fallbacks.push(data.endpoint); // shown in the footer when the run is done
    }
  }

  findCard(data) {
    if (data.tool_call_id) {
      const byId = this.cards.find((c) => c.toolCallId === data.tool_call_id);
      if (byId) return byId;
    }
    for (let i = this.cards.length - 1; i >= 0; i -= 1) {
      if (this.cards[i].running && this.cards[i].toolName === data.tool_name) return this.cards[i];
    }
    return null;
  }

  newCard(data) {
    const card = new ToolCard({ toolName: data.tool_name, toolArgs: data.tool_args, toolCallId: data.tool_call_id });
    this.cards.push(card);
    this.addStep(card.el);
    return card;
  }

  planView() {
    if (!this.plan) this.plan = new PlanView({ addStep: (node) => this.addStep(node) });
    return this.plan;
  }

  onPlan(data) {
    const status = this.planView().handle(data);
    if (status) this.setStatus(status);
  }

  onApproval(data) {
    const inPlan = this.plan !== null && this.plan.approval(data);
    if (!inPlan) (this.findCard(data) || this.newCard(data)).approval(data);
    if (data.status === "pending") this.setStatus(gettext("Waiting for approval…"));
  }

  onPhase(data) {
    if (data.phase === "selecting_tools") {
      this.setStatus(interpolate(gettext("Choosing the right tools among %s…"), [formatNumber(data.total_tools)]));
    } else {
      if (data.phase === "replanning") this.planView().replanning(data);
      this.setStatus(phaseStatus(data.phase) || gettext("Planning…"));
    }
  }

  onAnswer(data) {
    if (this.answerFromHistory && data.status !== "done") return; // already shown from the history
    if (data.status === "start") {
      this.answerText = "";
    } else if (data.status === "delta") {
      this.answerText += data.content || "";
    } else if (data.status === "done") {
      // The whole answer; when fallback is true it replaces whatever was streamed.
      if (typeof data.content === "string" && (data.content || data.fallback)) this.answerText = data.content;
      this.answerFromHistory = false;
      this.renderAnswer();
      return;
    }
    this.queueAnswerRender();
  }

  queueAnswerRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.renderAnswer();
      this.changed();
    });
  }

  renderAnswer() {
    this.answer.hidden = !this.answerText;
    this.answer.innerHTML = renderMarkdown(this.answerText);
    this.citations.link(this.answer);
  }

  // -- follow-ups sent while the agent works ---------------------------------------------------
  addFollowUp(content, { taken = false } = {}) {
    const state = el("span", { class: "follow-up-state muted" });
    const node = el("li", { class: "step follow-up" }, el("div", { class: "msg user small", text: content }), state);
    const followUp = { content, node, state, status: "pending" };
    this.followUps.push(followUp);
    this.setFollowUpStatus(followUp, taken ? "taken" : "pending");
    if (taken) this.addStep(node);
    else this.steps.append(node); // behind the follow-ups waiting before it
    this.changed();
    return followUp;
  }

  setFollowUpStatus(followUp, status) {
    followUp.status = status;
    followUp.node.dataset.status = status;
    if (status === "pending") {
      followUp.state.replaceChildren(gettext("Sent while the agent was working…"));
    } else if (status === "taken") {
      followUp.state.replaceChildren(gettext("Taken into account by the agent"));
    } else if (status === "missed") {
      const again = el("button", { type: "button", class: "link", text: gettext("Send as a new message") });
      again.addEventListener("click", () => {
        again.disabled = true;
        this.onResend(followUp.content);
      });
      followUp.state.replaceChildren(gettext("The agent finished before reading this."), " ", again);
    } else if (status === "failed") {
      followUp.state.replaceChildren(gettext("Not sent."));
    }
  }

  onFollowUpTaken(data) {
    const match = this.followUps.find((f) => f.status === "pending" && f.content === data.content);
    if (match) {
      this.setFollowUpStatus(match, "taken");
      this.addStep(match.node); // moves it to where the agent took it in
    } else {
      this.addFollowUp(data.content || "", { taken: true });
    }
  }

  // The run ended without reading these: offer to send them as new messages.
  missPendingFollowUps() {
    for (const followUp of this.followUps) {
      if (followUp.status !== "pending") continue;
      this.steps.append(followUp.node); // after everything the run did without reading it
      this.setFollowUpStatus(followUp, "missed");
    }
  }

  failNewestFollowUp() {
    const pending = this.followUps.filter((f) => f.status === "pending");
    const last = pending[pending.length - 1];
    if (!last) return null;
    this.setFollowUpStatus(last, "failed");
    return last.content;
  }

  // -- an answer cut off because its server stopped (see chat-resume.js) -------------------------
  onInterrupted(data) {
    this.setWorking(false);
    for (const card of this.cards) if (card.running) card.pause();
    if (this.notice) this.continued(); // it had been resumed, and was cut again before saying anything
    if (!data.resumable) {
      this.addStep(el("li", { class: "step run-error", role: "alert", text: data.message || gettext("The server answering this stopped.") }));
      return;
    }
    this.notice = new InterruptNotice({ onContinue: () => this.continueRequested(), onChange: () => this.changed() });
    this.addStep(this.notice.el);
  }

  continueRequested() {
    this.ended = false;
    this.setWorking(true);
    this.setStatus(gettext("Continuing…"));
    this.onContinue(this.runId);
  }

  // The server would not resume the run (already resumed elsewhere, or a newer run): say so.
  continueRefused(message) {
    this.notice.refused(message);
    this.setWorking(false);
  }

  // An event of the run after its interruption: it continued, asked from here or from anywhere else.
  continued() {
    // A notice the user saw as live makes the turn live again; in a replay it was over long ago.
    if (this.notice.wasLive) this.ended = false;
    this.notice.continued();
    this.notice = null;
    for (const card of this.cards) if (card.running) card.unpause();
  }

  // A later run started: the server will not resume this one, its answer stays as it is.
  superseded() {
    this.notice.superseded();
    this.notice = null;
    this.ended = true;
    for (const card of this.cards) if (card.running) card.stop();
    this.missPendingFollowUps();
    this.changed();
  }

  onDone(data) {
    this.done = true;
    if (this.plan) this.plan.stop();
    for (const card of this.cards) if (card.running) card.stop();
    this.missPendingFollowUps();
    if (!this.answerText && data.answer) {
      this.answerText = data.answer;
      this.renderAnswer();
    }
    const parts = [];
    if (data.cancelled) parts.push(el("span", { class: "badge muted stopped", text: gettext("Stopped") }));
    if (this.plan && this.plan.rounds.size) {
      // A plan's "steps" are its planned tasks: count those (and the rounds), not tool-loop iterations.
      const rounds = this.plan.rounds.size;
      const tasks = this.plan.stepCount();
      parts.push(el("span", { text: interpolate(ngettext("%s round", "%s rounds", rounds), [formatNumber(rounds)]) }));
      parts.push(el("span", { text: interpolate(ngettext("%s plan step", "%s plan steps", tasks), [formatNumber(tasks)]) }));
    } else {
      const iterations = Number(data.iterations) || 0;
      parts.push(el("span", { text: interpolate(ngettext("%s step", "%s steps", iterations), [formatNumber(iterations)]) }));
    }
    const tokens = Number(data.usage?.total_tokens) || 0;
    parts.push(el("span", { text: interpolate(ngettext("%s token", "%s tokens", tokens), [formatNumber(tokens)]) }));
    parts.push(el("span", { text: formatDuration(data.elapsed) }));
    if (this.fallbacks.length) {
      parts.push(el("span", { class: "fallback-note", text: interpolate(gettext("answered by %s"), [this.fallbacks.join(", ")]) }));
    }
    const note = data.cancelled ? "" : stopNote(data.stop_reason);
    if (note) parts.push(el("span", { class: "stop-note", text: note }));
    // Admins of the organisation get the way to the cause: the endpoint's page, at its Check endpoint.
    const checkUrl = document.getElementById("chat")?.dataset.endpointCheckUrl;
    if (data.stop_reason === "llm_error" && checkUrl) {
      parts.push(el("a", { class: "endpoint-check-link", href: checkUrl, text: gettext("Check the model endpoint") }));
    }
    this.footer.replaceChildren(...parts);
    this.footer.hidden = false;
    this.setWorking(false);
  }
}
