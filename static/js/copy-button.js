// Copy buttons: <button data-copy-target="ID"> copies the value (or text) of the element with that id
// and says so next to itself. No inline handlers (the pages run under a strict CSP).
(function () {
  "use strict";

  function fallbackCopy(field) {
    if (typeof field.select !== "function") return false;
    field.focus();
    field.select();
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function say(button, text) {
    const status = button.parentElement && button.parentElement.querySelector(".copy-status");
    if (status) status.textContent = text || "";
  }

  async function copy(button) {
    const field = document.getElementById(button.dataset.copyTarget || "");
    if (!field) return;
    const value = "value" in field ? field.value : field.textContent;
    let copied = false;
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(value);
        copied = true;
      } catch (error) {
        copied = false;
      }
    }
    if (!copied) copied = fallbackCopy(field);
    say(button, copied ? button.dataset.copiedText : button.dataset.failedText);
    button.dataset.copied = copied ? "true" : "false";
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("[data-copy-target]");
    if (!button) return;
    event.preventDefault();
    copy(button);
  });
})();
