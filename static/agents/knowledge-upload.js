// A knowledge base's admin page: the upload of several documents shows its progress, and the documents'
// list refreshes itself while any of them is being indexed. Without this script the form posts as usual.
(function () {
  "use strict";
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }

  function start() {
    const form = document.getElementById("knowledgebase_form");
    if (!form) return;
    const input = form.querySelector('input[type="file"][name="upload"]');
    // The page's translated words (templates/admin/agents/knowledgebase/change_form.html).
    const words = document.getElementById("knowledge-upload-text");
    const text = (key) => (words && words.dataset[key]) || key;

    if (input && window.FormData && window.XMLHttpRequest) {
      let submitter = null;
      form.addEventListener("click", (event) => {
        if (event.target instanceof HTMLInputElement && event.target.type === "submit") submitter = event.target;
      });
      form.addEventListener("submit", (event) => {
        if (!input.files || !input.files.length) return; // nothing to upload: an ordinary post
        event.preventDefault();
        const data = new FormData(form);
        if (submitter && submitter.name) data.append(submitter.name, submitter.value);
        const bar = document.createElement("progress");
        bar.className = "knowledge-upload-progress";
        bar.max = 100;
        bar.value = 0;
        const label = document.createElement("span");
        label.className = "knowledge-upload-label";
        label.textContent = text("uploading");
        input.after(bar, label);
        form.querySelectorAll('input[type="submit"]').forEach((button) => { button.disabled = true; });
        const request = new XMLHttpRequest();
        request.open("POST", form.action || window.location.href);
        request.upload.addEventListener("progress", (progress) => {
          if (!progress.lengthComputable) return;
          const percent = Math.round((progress.loaded / progress.total) * 100);
          bar.value = percent;
          label.textContent = `${percent}%`;
        });
        request.addEventListener("load", () => {
          if (request.responseURL && request.responseURL !== (form.action || window.location.href)) {
            window.location.assign(request.responseURL); // saved: the admin redirected
          } else {
            document.open();
            document.write(request.responseText); // the form again, with its errors
            document.close();
          }
        });
        request.addEventListener("error", () => {
          label.textContent = text("failed");
          form.querySelectorAll('input[type="submit"]').forEach((button) => { button.disabled = false; });
        });
        request.send(data);
      });
    }

    // While a document waits or is indexed, refresh the documents' list every few seconds.
    const group = document.getElementById("documents-group");
    const working = () => group && group.querySelector('[data-status="queued"], [data-status="parsing"], [data-status="embedding"]');
    if (!working()) return;
    const timer = window.setInterval(async () => {
      try {
        const response = await fetch(window.location.href, { credentials: "same-origin" });
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById("documents-group");
        if (fresh) group.replaceChildren(...fresh.childNodes);
      } catch (error) {
        return; // try again at the next tick
      }
      if (!working()) window.clearInterval(timer);
    }, 3000);
  }
})();
