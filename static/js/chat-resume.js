// An answer cut off because the server answering it stopped (an `error` event with code
// run_interrupted and resumable: true). The turn shows a notice with a Continue button that sends
// {"type": "resume_run", "run_id": ...}; the run then continues from its checkpoint in the same stream.
//
// The server resumes only the conversation's newest run, and only while nothing happened after its
// interruption (agents.selectors.run_to_resume). So does this page: any later event retires the notice,
// an event of the same run because it continued, one of another run because a newer question was asked
// (after which the cut answer stays as it is). A replay carries every later event right behind the
// interruption, so the button appears only once the stream has been quiet for a moment: a conversation
// replayed from the start never offers to continue an answer that has already been continued.

import { el } from "./chat-dom.js";
import { gettext } from "./chat-i18n.js";

export const INTERRUPTED_CODE = "run_interrupted";
const SETTLE_MS = 250;

// States: "pending" (just shown, may be followed at once by later events), "open" (Continue offered),
// "resuming" (asked, waiting for the run's events), "refused" (the server said there is nothing to
// resume), and the final ones: "continued" (events of the run arrived), "superseded" (a later run).
export class InterruptNotice {
  // onContinue(): send resume_run; returns nothing. onChange(): the notice's state changed.
  constructor({ onContinue, onChange }) {
    this.onContinue = onContinue;
    this.onChange = onChange;
    this.state = "pending";
    this.text = el("span", {
      class: "interrupt-text",
      text: gettext("The server answering this stopped before it finished. The answer can continue where it left off."),
    });
    this.button = el("button", { type: "button", class: "send-button resume-button", hidden: true, text: gettext("Continue") });
    this.button.addEventListener("click", () => this.resume());
    this.el = el("li", { class: "step run-error interrupt-notice", role: "status", dataset: { state: this.state } }, this.text, " ", this.button);
    this.timer = setTimeout(() => this.open(), SETTLE_MS);
  }

  // Continue is offered (or was just asked for): the conversation's newest event is this interruption.
  get offered() {
    return this.state === "open" || this.state === "resuming";
  }

  // Whether the user saw this notice as live (Continue offered or clicked), rather than in a replay.
  get wasLive() {
    return this.state === "open" || this.state === "resuming" || this.state === "refused";
  }

  get final() {
    return this.state === "continued" || this.state === "superseded";
  }

  setState(state) {
    clearTimeout(this.timer);
    this.state = state;
    this.el.dataset.state = state;
    this.onChange();
  }

  open() {
    if (this.state !== "pending") return;
    this.button.hidden = false;
    this.setState("open");
  }

  resume() {
    if (this.state !== "open") return;
    this.button.disabled = true;
    this.button.textContent = gettext("Continuing…");
    this.setState("resuming");
    this.onContinue();
  }

  // The server refused resume_run (nothing_to_resume): say why; events may still show it continued.
  refused(message) {
    if (this.final) return;
    this.button.remove();
    this.text.textContent = message || gettext("This answer can no longer be continued here.");
    this.setState("refused");
  }

  // Events of the same run arrived: it continued (from this page, another tab or an API client).
  continued() {
    if (this.final) return;
    this.button.remove();
    this.el.className = "step divider interrupt-notice";
    this.el.removeAttribute("role");
    this.text.textContent = gettext("The server answering this stopped; the answer continued from where it left off.");
    this.setState("continued");
  }

  // A later run started: this answer stays unfinished (the server would not resume it any more).
  superseded() {
    if (this.final) return;
    this.button.remove();
    this.text.textContent = gettext("The server answering this stopped before it finished. A newer question was asked, so this answer stays as it is.");
    this.setState("superseded");
  }
}
