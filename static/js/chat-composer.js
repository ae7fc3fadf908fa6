// The message box: Enter sends, Shift+Enter adds a line. While the agent works it stays usable (a
// message then becomes a follow-up the agent takes into account) and a Stop button appears. While the
// newest answer is cut off (its server stopped) the agent is not working: a message starts a new
// answer, as the server does, and the hint says that Continue is the other way on.
//
// The box never cuts what is typed or pasted: a message over the server's limit (maxChars, the same
// number the server checks) is refused before sending, with a message under the box that says by how
// much, and stays in the box to be shortened.
//
// Files attached to the message wait in the tray above the box (chat-attachments.js): Send waits while
// they upload, and a message goes with the files that uploaded.

import { formatNumber, gettext, interpolate } from "./chat-i18n.js";

const MAX_HEIGHT_RATIO = 0.4;

export class Composer {
  // onSend(content, attachments) -> true when accepted; onStop(); error: the element that says why a
  // message is refused; attachments: the AttachmentTray (null: the page attaches no files).
  constructor({ form, input, sendButton, stopButton, hint, error, maxChars, onSend, onStop, attachments = null }) {
    this.form = form;
    this.input = input;
    this.sendButton = sendButton;
    this.stopButton = stopButton;
    this.hint = hint;
    this.error = error;
    this.maxChars = maxChars;
    this.onSend = onSend;
    this.onStop = onStop;
    this.attachments = attachments;
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
    const tray = this.attachments;
    if (!content.trim()) {
      if (tray && tray.count) tray.say(gettext("Write a message to send with the files."));
      return;
    }
    if (!this.checkLength()) return;
    if (tray && !tray.ready({ followUp: this.working })) return; // the tray says why
    const files = tray ? tray.sendable() : [];
    if (this.onSend(content, files)) {
      this.input.value = "";
      this.autosize();
      if (tray) tray.clear();
    }
  }

  // Send is off while the attached files hold the message back (the tray says why).
  refreshSend() {
    const blocked = !this.input.disabled && Boolean(this.attachments && this.attachments.blocking);
    this.sendButton.disabled = this.input.disabled || blocked;
    if (blocked) this.sendButton.title = this.attachments.blocker();
    else this.sendButton.removeAttribute("title");
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

  // Put a message the server refused ({content, attachments}) back into an empty box, and its files back
  // into the tray, so nothing typed or attached is lost.
  restore(refused) {
    if (!refused) return;
    const { content, attachments = [] } = refused;
    if (content && !this.input.value.trim()) {
      this.input.value = content;
      this.autosize();
    }
    if (this.attachments && attachments.length) this.attachments.restore(attachments);
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
    if (this.attachments) this.attachments.refresh();
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
    if (this.attachments) this.attachments.disable();
  }
}
