// Forms with data-confirm="question" ask it before they are sent (a deletion); the question comes already
// translated from the page. No inline handlers (the pages run under a strict CSP); without a script the
// form is sent as it is.
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();
