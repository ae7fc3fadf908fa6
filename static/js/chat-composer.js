// The message box: Enter sends, Shift+Enter adds a line. While the agent works it stays usable (a
// message then becomes a follow-up the agent takes into account) and a Stop button appears. While the
// newest answer is cut off (its server stopped) the agent is not working: a message starts a new
// answer, as the server does, and the hint says that Continue is the other way on.

import { gettext, interpolate } from "./chat-i18n.js";

const MAX_HEIGHT_RATIO = 0.4;

export class Composer {
  // onSend(content) -> true when accepted; onStop(); onInvalid(message).
  constructor({ form, input, sendButton, stopButton, hint, maxChars, onSend, onStop, onInvalid }) {
    this.form = form;
    this.input = input;
    this.sendButton = sendButton;
    this.stopButton = stopButton;
    this.hint = hint;
    this.maxChars = maxChars;
    this.onSend = onSend;
    this.onStop = onStop;
    this.onInvalid = onInvalid;
    this.idlePlaceholder = input.getAttribute("placeholder") || "";
    this.working = false;
    this.interrupted = false;

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    input.addEventListener("keydown", (event) => {
      // isComposing: Enter that confirms an IME candidate (Chinese input) must not send.
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
        event.preventDefault();
        this.submit();
      }
    });
    input.addEventListener("input", () => this.autosize());
    stopButton.addEventListener("click", () => {
      stopButton.disabled = true;
      stopButton.textContent = gettext("Stopping…");
      this.onStop();
    });
  }

  submit() {
    const content = this.input.value;
    if (!content.trim()) return;
    if (content.length > this.maxChars) {
      this.onInvalid(
        interpolate(gettext("The message is too long (%(size)s characters; the limit is %(limit)s)."), { size: content.length, limit: this.maxChars }, true),
      );
      return;
    }
    if (this.onSend(content)) {
      this.input.value = "";
      this.autosize();
    }
  }

  // Put a message the server refused back into an empty box, so nothing typed is lost.
  restore(content) {
    if (content && !this.input.value.trim()) {
      this.input.value = content;
      this.autosize();
    }
  }

  autosize() {
    this.input.style.height = "auto";
    const max = Math.round(window.innerHeight * MAX_HEIGHT_RATIO);
    this.input.style.height = `${Math.min(this.input.scrollHeight, max)}px`;
  }

  setWorking(working) {
    this.working = working;
    this.form.classList.toggle("working", working);
    this.stopButton.hidden = !working;
    this.stopButton.disabled = false;
    this.stopButton.textContent = gettext("Stop");
    this.input.setAttribute(
      "placeholder",
      working ? gettext("Add a follow-up; the agent will take it into account…") : this.idlePlaceholder,
    );
    this.showHint();
  }

  // The newest answer was cut off and can be continued (its Continue button is offered).
  setInterrupted(interrupted) {
    this.interrupted = interrupted;
    this.showHint();
  }

  showHint() {
    if (this.input.disabled) return; // disable() said why
    if (this.working) this.hint.textContent = gettext("The agent is working. You can still send a follow-up.");
    else if (this.interrupted) {
      this.hint.textContent = gettext(
        "The last answer stopped before it finished: Continue it, or send a new message (that answer then stays as it is).",
      );
    } else this.hint.textContent = gettext("Enter to send · Shift+Enter for a new line");
  }

  disable(reason) {
    this.input.disabled = true;
    this.sendButton.disabled = true;
    this.stopButton.hidden = true;
    this.hint.textContent = reason;
  }
}
