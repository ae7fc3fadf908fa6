// The message box: Enter sends, Shift+Enter adds a line. While the agent works it stays usable (a
// message then becomes a follow-up the agent takes into account) and a Stop button appears. While the
// newest answer is cut off (its server stopped) the agent is not working: a message starts a new
// answer, as the server does, and the hint says that Continue is the other way on.
//
// The box never cuts what is typed or pasted: a message over the server's limit (maxChars, the same
// number the server checks) is refused before sending, with a message under the box that says by how
// much, and stays in the box to be shortened.

import { formatNumber, gettext, interpolate } from "./chat-i18n.js";

const MAX_HEIGHT_RATIO = 0.4;

export class Composer {
  // onSend(content) -> true when accepted; onStop(); error: the element that says why a message is refused.
  constructor({ form, input, sendButton, stopButton, hint, error, maxChars, onSend, onStop }) {
    this.form = form;
    this.input = input;
    this.sendButton = sendButton;
    this.stopButton = stopButton;
    this.hint = hint;
    this.error = error;
    this.maxChars = maxChars;
    this.onSend = onSend;
    this.onStop = onStop;
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
    input.addEventListener("input", () => {
      this.autosize();
      if (!this.error.hidden) this.checkLength(); // the refusal goes away once the text fits
    });
    stopButton.addEventListener("click", () => {
      stopButton.disabled = true;
      stopButton.textContent = gettext("Stopping…");
      this.onStop();
    });
  }

  submit() {
    const content = this.input.value;
    if (!content.trim() || !this.checkLength()) return;
    if (this.onSend(content)) {
      this.input.value = "";
      this.autosize();
    }
  }

  // Send `text` as if typed (an example question), unless the box holds a draft of the user's own.
  sendText(text) {
    if (this.input.value.trim()) {
      this.input.focus();
      return;
    }
    this.input.value = text;
    this.submit();
  }

  // True when the box's text fits the limit; otherwise say so under the box and return false.
  checkLength() {
    const size = this.input.value.length;
    const fits = size <= this.maxChars;
    this.error.hidden = fits;
    this.form.classList.toggle("too-long", !fits);
    this.input.setAttribute("aria-invalid", String(!fits));
    if (!fits) {
      this.error.textContent = interpolate(
        gettext("Not sent: the message is %(size)s characters long and the limit is %(limit)s. Shorten it by %(over)s characters."),
        { size: formatNumber(size), limit: formatNumber(this.maxChars), over: formatNumber(size - this.maxChars) },
        true,
      );
    }
    return fits;
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
