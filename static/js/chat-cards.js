// Tool-call cards: one collapsible card per tool call (name, arguments, observation, time, outcome),
// with a running state, an error state and an approval-pending state.

import { el, oneLine, prettyJson } from "./chat-dom.js";
import { formatDuration, gettext, interpolate } from "./chat-i18n.js";
import { renderMarkdown } from "./chat-markdown.js";

const LONG_OBSERVATION_CHARS = 1200;
const LONG_OBSERVATION_LINES = 18;

function outcomeLabel(outcome) {
  switch (outcome) {
    case "ok":
      return gettext("OK");
    case "error":
      return gettext("Failed");
    case "timeout":
      return gettext("Timed out");
    case "blocked":
      return gettext("Blocked");
    case "invalid_args":
      return gettext("Invalid arguments");
    case "unknown_tool":
      return gettext("Unknown tool");
    default:
      return outcome || "";
  }
}

function people(value) {
  if (!Array.isArray(value)) return value ? String(value) : "";
  return value
    .map((p) => (p && typeof p === "object" ? p.name || p.username || p.display_name || p.id : p))
    .filter(Boolean)
    .join(", ");
}

// The request's page in the approvals inbox (its requester may open it too), under the chat's org.
function approvalUrl(approvalId) {
  const root = document.querySelector("[data-org]");
  const org = root && root.dataset.org;
  if (!org || !approvalId || !/^[0-9a-f-]{32,36}$/i.test(String(approvalId))) return "";
  return `/o/${encodeURIComponent(org)}/approvals/${encodeURIComponent(approvalId)}/`;
}

export class ToolCard {
  constructor({ toolName, toolArgs, toolCallId, iteration }) {
    this.toolName = toolName || "";
    this.toolCallId = toolCallId || "";
    this.running = true;
    this.status = el("span", { class: "tool-status", "aria-hidden": "true" });
    this.preview = el("span", { class: "tool-preview muted" });
    this.badges = el("span", { class: "tool-badges" });
    this.time = el("span", { class: "tool-time muted" });
    this.argsPre = el("pre", { class: "tool-json" });
    this.approvalBox = el("div", { class: "tool-approval", hidden: true });
    this.resultBox = el("div", { class: "tool-result", hidden: true });
    this.errorBox = el("div", { class: "tool-error", hidden: true });
    this.artifactBox = el("div", { class: "tool-artifacts", hidden: true });
    this.details = el(
      "details",
      { class: "tool-details" },
      el(
        "summary",
        {},
        this.status,
        el("code", { class: "tool-name", text: this.toolName }),
        this.preview,
        this.badges,
        this.time,
      ),
      el(
        "div",
        { class: "tool-body" },
        this.approvalBox,
        el("h4", { text: gettext("Arguments") }),
        this.argsPre,
        this.errorBox,
        this.resultBox,
        this.artifactBox,
      ),
    );
    this.el = el(
      "li",
      {
        class: "step tool-card running",
        dataset: { toolCallId: this.toolCallId, toolName: this.toolName, iteration: iteration ?? "" },
      },
      this.details,
    );
    this.setArgs(toolArgs);
    this.setBadge("running", gettext("Running"));
  }

  setArgs(args) {
    this.argsPre.textContent = prettyJson(args ?? {});
    this.preview.textContent = oneLine(args ?? {});
  }

  setBadge(kind, label, title) {
    this.badges.replaceChildren(el("span", { class: `badge ${kind}`, text: label, title }));
  }

  addBadge(kind, label, title) {
    this.badges.append(el("span", { class: `badge ${kind}`, text: label, title }));
  }

  // The run stopped (done, or a newer run while it was interrupted) before this call finished.
  stop() {
    this.running = false;
    this.el.classList.remove("running", "paused");
    this.el.classList.add("stopped");
    const approval = this.badges.querySelector(".badge.approval");
    this.setBadge("muted", gettext("Not finished"));
    // An approval's outcome (cancelled, when the run was stopped while it waited) stays visible.
    if (approval && !approval.classList.contains("pending")) this.badges.append(approval);
  }

  // The run's server stopped while this call was in flight: nothing runs it until the run continues.
  pause() {
    this.el.classList.replace("running", "stopped");
    this.el.classList.add("paused");
    this.setBadge("muted", gettext("Interrupted"));
  }

  unpause() {
    if (!this.el.classList.contains("paused")) return;
    this.el.classList.remove("paused", "stopped");
    this.el.classList.add("running");
    this.setBadge("running", gettext("Running"));
  }

  // The step iteration done payload: observation, error, iter_elapsed, outcome, tool_args, artifacts.
  finish(data) {
    // Closed because the run was stopped while the call ran: it did not finish, it did not fail.
    if (data.outcome === "cancelled") return this.stop();
    this.running = false;
    const failed = Boolean(data.error) || (data.outcome && data.outcome !== "ok");
    this.el.classList.remove("running", "awaiting-approval", "paused", "stopped");
    this.el.classList.add(failed ? "failed" : "succeeded");
    if (data.tool_args !== undefined) this.setArgs(data.tool_args);
    const outcome = data.outcome || (failed ? "error" : "ok");
    const approval = this.badges.querySelector(".badge.approval");
    this.setBadge(failed ? "err" : "ok", outcomeLabel(outcome));
    if (approval && !approval.classList.contains("pending")) this.badges.append(approval);
    this.time.textContent = data.iter_elapsed != null ? formatDuration(data.iter_elapsed) : "";
    if (data.error) {
      this.errorBox.replaceChildren(
        el("h4", { text: gettext("Error") }),
        el("pre", { class: "tool-error-text", text: String(data.error) }),
      );
      this.errorBox.hidden = false;
    }
    const observation = data.observation ? String(data.observation) : "";
    // A failed call's observation usually restates the error for the model; show it only if it adds something.
    if (observation && !(data.error && (observation.startsWith("Error") || observation.includes(String(data.error))))) {
      this.showObservation(observation);
    }
    if (Array.isArray(data.artifacts) && data.artifacts.length) this.showArtifacts(data.artifacts);
  }

  showObservation(raw) {
    const text = /^\s*[[{]/.test(raw) ? prettyJson(raw) : raw;
    const pre = el("pre", { class: "tool-observation", text });
    const children = [el("h4", { text: gettext("Result") }), pre];
    const long = text.length > LONG_OBSERVATION_CHARS || text.split("\n").length > LONG_OBSERVATION_LINES;
    if (long) {
      pre.classList.add("clamped");
      const toggle = el("button", {
        type: "button",
        class: "link show-all",
        text: interpolate(gettext("Show all (%s characters)"), [text.length]),
      });
      toggle.addEventListener("click", () => {
        const clamped = pre.classList.toggle("clamped");
        toggle.textContent = clamped
          ? interpolate(gettext("Show all (%s characters)"), [text.length])
          : gettext("Show less");
      });
      children.push(toggle);
    }
    this.resultBox.replaceChildren(...children);
    this.resultBox.hidden = false;
  }

  showArtifacts(artifacts) {
    const items = artifacts.map((artifact) => {
      const name = String(artifact.name || gettext("artifact"));
      const type = String(artifact.mime_type || "").split(";")[0].trim().toLowerCase();
      const content = typeof artifact.content === "string" ? artifact.content : null;
      const box = el("div", { class: "artifact" }, el("strong", { text: name }), " ", el("span", { class: "muted", text: type }));
      if (content !== null && type === "text/html") {
        // A sandbox without allow-scripts: the preview cannot run code or reach this page.
        box.append(el("iframe", { class: "artifact-preview", sandbox: "", srcdoc: content, title: name }));
      } else if (content !== null && type === "text/markdown") {
        const preview = el("div", { class: "artifact-preview md" });
        preview.innerHTML = renderMarkdown(content);
        box.append(preview);
      }
      if (content !== null) {
        const url = URL.createObjectURL(new Blob([content], { type: type || "text/plain" }));
        box.append(" ", el("a", { href: url, download: name, text: gettext("Download") }));
      }
      return box;
    });
    this.artifactBox.replaceChildren(el("h4", { text: gettext("Files") }), ...items);
    this.artifactBox.hidden = false;
  }

  // The approval payload: status pending | approved | rejected | expired | cancelled (the run stopped
  // while the call waited), approvers, decided_by, reason, approval_id, note (for the requester).
  approval(data) {
    const status = data.status;
    let text;
    let kind;
    if (status === "pending") {
      this.el.classList.add("awaiting-approval");
      kind = "approval pending";
      const who = people(data.approvers);
      text = who
        ? interpolate(gettext("Waiting for approval from %s."), [who])
        : gettext("Waiting for an approver to decide.");
      // The requester never decides their own request: the server says who does (already translated).
      if (data.note) text += " " + data.note;
      this.setBadge(kind, gettext("Waiting for approval"));
      this.details.open = true;
    } else {
      this.el.classList.remove("awaiting-approval");
      const by = people(data.decided_by);
      if (status === "approved") {
        kind = "approval ok";
        text = by ? interpolate(gettext("Approved by %s."), [by]) : gettext("Approved.");
      } else if (status === "rejected") {
        kind = "approval err";
        text = by ? interpolate(gettext("Rejected by %s."), [by]) : gettext("Rejected.");
      } else if (status === "cancelled") {
        kind = "approval muted";
        text = gettext("The approval request was cancelled: the run was stopped before anyone decided.");
      } else {
        kind = "approval err";
        text = gettext("The approval request expired before anyone decided.");
      }
      const label =
        {
          approved: gettext("Approved"),
          rejected: gettext("Rejected"),
          cancelled: gettext("Cancelled"),
        }[status] || gettext("Expired");
      if (this.running) this.setBadge("running", gettext("Running"));
      this.addBadge(kind, label);
    }
    const lines = [el("p", { text })];
    if (data.reason) lines.push(el("p", { class: "muted", text: data.reason }));
    const url = approvalUrl(data.approval_id);
    if (url) {
      const link = status === "pending" ? gettext("Open the approval request") : gettext("See the approval request");
      lines.push(el("p", {}, [el("a", { href: url, class: "approval-link", text: link })]));
    }
    this.approvalBox.className = `tool-approval ${status}`;
    this.approvalBox.replaceChildren(...lines);
    this.approvalBox.hidden = false;
  }
}
