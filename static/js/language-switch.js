// Submits the language form as soon as another language is chosen (kept out of the page: the
// Content-Security-Policy allows no inline handlers). Without JavaScript the form's button does it.
for (const select of document.querySelectorAll("form.lang select[name=language]")) {
  select.addEventListener("change", () => select.form.submit());
}
