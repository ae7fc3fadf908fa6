// Files in the chat: the composer's tray of files attached to the message being written, and the list of
// a sent message's files in the conversation.
//
// A file is uploaded as soon as it is added (the paperclip, a drop on the conversation, a paste), one
// request per file so that each chip shows its own progress: POST multipart "files" to the REST API
// (/api/v1/orgs/<slug>/attachments/), answered with the file's outcome. It is then pending on the server
// until a message is sent with its id, or until its chip is removed (DELETE). The server decides what a
// file is from its bytes and refuses it with a message in the user's language, shown on its chip; a
// refused file is not sent. A file over the per-file limit is refused here already, without uploading it.
//
// An agent whose model cannot read images is told so before anything is sent: a picture gets the notice
// on its chip (it is not uploaded at all when the browser knows it is one) and the message cannot be sent
// until it is removed.

import { apiRequest, csrfToken, errorMessage } from "./chat-api.js";
import { el } from "./chat-dom.js";
import { formatBytes, gettext, interpolate } from "./chat-i18n.js";

const THUMBNAIL_MAX_BYTES = 8 * 1024 * 1024;
const PLACEHOLDER_ID = "00000000-0000-0000-0000-000000000000";
// The formats the server reads (agents.attachments.sniffing), by extension, and how they are called.
const EXTENSION_FORMATS = {
  pdf: "pdf",
  docx: "docx",
  xlsx: "xlsx",
  pptx: "pptx",
  csv: "csv",
  md: "markdown",
  markdown: "markdown",
  html: "html",
  htm: "html",
  txt: "text",
  png: "png",
  jpg: "jpeg",
  jpeg: "jpeg",
  gif: "gif",
  webp: "webp",
};
const FORMAT_LABELS = {
  pdf: "PDF",
  docx: "Word",
  xlsx: "Excel",
  pptx: "PowerPoint",
  csv: "CSV",
  markdown: "Markdown",
  html: "HTML",
  png: "PNG",
  jpeg: "JPEG",
  gif: "GIF",
  webp: "WebP",
};
const IMAGE_FORMATS = new Set(["png", "jpeg", "gif", "webp"]);
const PASTED_EXTENSIONS = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp" };

function extensionOf(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
}

// "PDF", "Word", "PNG", … (the server's format once it has read the file, else the name's extension).
export function formatLabel(format, name = "") {
  const known = format || EXTENSION_FORMATS[extensionOf(name)] || "";
  if (known === "text") return gettext("Text");
  if (FORMAT_LABELS[known]) return FORMAT_LABELS[known];
  const extension = extensionOf(name);
  return extension && extension.length <= 5 ? extension.toUpperCase() : gettext("File");
}

function describe(attachment) {
  return `${formatLabel(attachment.format, attachment.name)} · ${formatBytes(attachment.size)}`;
}

// The browser thinks the file is a picture (its type, else its name); the server has the last word.
function looksLikeImage(file) {
  if (file.type) return file.type.startsWith("image/");
  return IMAGE_FORMATS.has(EXTENSION_FORMATS[extensionOf(file.name)]);
}

function two(n) {
  return String(n).padStart(2, "0");
}

// A pasted picture comes unnamed ("image.png"): screenshot-20260501-143012.png, in local time.
function pastedName(file, now = new Date()) {
  const stamp = `${now.getFullYear()}${two(now.getMonth() + 1)}${two(now.getDate())}-${two(now.getHours())}${two(now.getMinutes())}${two(now.getSeconds())}`;
  return `screenshot-${stamp}.${PASTED_EXTENSIONS[file.type] || extensionOf(file.name) || "png"}`;
}

// Where the web app downloads an attachment (the page gives the route with zeros for the id).
export function attachmentFileUrl(id) {
  const template = document.getElementById("chat")?.dataset.attachmentFileUrl || "";
  return template ? template.replace(PLACEHOLDER_ID, encodeURIComponent(String(id))) : "";
}

// The files sent with a message, [{id, name, kind, format, size}], each a download link.
export function attachmentList(attachments) {
  const list = el("ul", { class: "msg-attachments", "aria-label": gettext("Attached files") });
  for (const attachment of attachments) {
    const url = attachmentFileUrl(attachment.id);
    list.append(
      el(
        "li",
        { class: "msg-attachment", dataset: { kind: attachment.kind || "document", id: attachment.id } },
        url
          ? el("a", { class: "msg-attachment-name", href: url, download: "", text: attachment.name })
          : el("span", { class: "msg-attachment-name", text: attachment.name }),
        el("span", { class: "msg-attachment-meta muted", text: describe(attachment) }),
      ),
    );
  }
  return list;
}

// One file of the tray. state: uploading, stored, refused (not stored), unreadable (a picture this
// agent's model cannot read; stored or not) or removing.
class Chip {
  constructor({ file = null, attachment = null, onRemove }) {
    this.file = file;
    this.attachment = attachment;
    this.name = attachment ? attachment.name : file.name;
    this.size = attachment ? attachment.size : file.size;
    this.xhr = null;
    this.nameEl = el("span", { class: "attachment-name", title: this.name, text: this.name });
    this.metaEl = el("span", { class: "attachment-meta muted" });
    this.progressEl = el("progress", {
      class: "attachment-progress",
      max: "100",
      value: "0",
      "aria-label": interpolate(gettext("Uploading %s"), [this.name]),
    });
    this.messageEl = el("span", { class: "attachment-message", hidden: true });
    this.removeButton = el("button", {
      type: "button",
      class: "attachment-remove",
      "aria-label": interpolate(gettext("Remove %s"), [this.name]),
      title: gettext("Remove"),
      text: "×",
    });
    this.removeButton.addEventListener("click", () => onRemove(this));
    this.thumb = el("span", { class: "attachment-thumb", "aria-hidden": "true" });
    this.el = el(
      "li",
      { class: "attachment-chip" },
      this.thumb,
      el("span", { class: "attachment-body" }, this.nameEl, this.metaEl, this.progressEl, this.messageEl),
      this.removeButton,
    );
    this.thumb.textContent = extensionOf(this.name).toUpperCase().slice(0, 4);
    this.describe();
    if (file && looksLikeImage(file) && file.size <= THUMBNAIL_MAX_BYTES) this.showThumbnail(file);
  }

  showThumbnail(file) {
    // A data: URL (the page's policy allows data: pictures, not blob: ones).
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      if (typeof reader.result !== "string") return;
      this.thumb.replaceChildren(el("img", { src: reader.result, alt: "" }));
      this.thumb.classList.add("picture");
    });
    reader.readAsDataURL(file);
  }

  describe() {
    this.metaEl.textContent = `${formatLabel(this.attachment?.format, this.name)} · ${formatBytes(this.size)}`;
  }

  setState(state) {
    this.state = state;
    this.el.dataset.state = state;
    this.progressEl.hidden = state !== "uploading";
  }

  progress(fraction) {
    this.progressEl.value = Math.round(Math.min(1, Math.max(0, fraction)) * 100);
  }

  say(message, alert = true) {
    this.messageEl.textContent = message;
    this.messageEl.hidden = !message;
    if (alert) this.messageEl.setAttribute("role", "alert");
    else this.messageEl.removeAttribute("role");
  }

  stored(attachment) {
    this.attachment = attachment;
    this.size = attachment.size;
    this.name = attachment.name || this.name;
    this.nameEl.textContent = this.name;
    this.nameEl.title = this.name;
    this.el.dataset.id = attachment.id;
    this.progress(1);
    this.describe();
    this.say("");
    this.setState("stored");
  }
}

export class AttachmentTray {
  // tray: the chips' list; notice: where the tray says why the message cannot be sent yet; picker: the
  // file input and pickerButton its paperclip; dropZone: what takes dropped files; pasteTarget: where a
  // pasted file is attached; onChange(): the tray changed (the Send button follows it).
  constructor({ tray, notice, picker, pickerButton, dropZone, pasteTarget, uploadUrl, maxFileBytes, maxMessageBytes, readsImages, onChange }) {
    this.tray = tray;
    this.notice = notice;
    this.picker = picker;
    this.pickerButton = pickerButton;
    this.dropZone = dropZone;
    this.uploadUrl = uploadUrl;
    this.maxFileBytes = maxFileBytes;
    this.maxMessageBytes = maxMessageBytes;
    this.readsImages = readsImages;
    this.onChange = onChange;
    this.chips = [];
    this.attempted = ""; // what the user tried and could not do yet (shown until it can be done)
    this.disabled = false;
    this.dragDepth = 0;

    pickerButton.addEventListener("click", () => picker.click());
    picker.addEventListener("change", () => {
      this.add(picker.files);
      picker.value = "";
    });
    pasteTarget.addEventListener("paste", (event) => this.onPaste(event));
    dropZone.addEventListener("dragenter", (event) => this.onDragEnter(event));
    dropZone.addEventListener("dragover", (event) => this.onDragOver(event));
    dropZone.addEventListener("dragleave", () => this.onDragLeave());
    dropZone.addEventListener("drop", (event) => this.onDrop(event));
    // A file dropped next to the drop zone must not make the browser leave the chat to show it.
    for (const type of ["dragover", "drop"]) {
      document.addEventListener(type, (event) => {
        if (carriesFiles(event)) event.preventDefault();
      });
    }
  }

  get count() {
    return this.chips.length;
  }

  get uploading() {
    return this.chips.some((chip) => chip.state === "uploading" || chip.state === "removing");
  }

  get unreadable() {
    return this.chips.some((chip) => chip.state === "unreadable");
  }

  get totalBytes() {
    return this.chips.filter((chip) => chip.state === "stored").reduce((sum, chip) => sum + chip.size, 0);
  }

  // Why the files cannot be sent now ("" when they can).
  blocker() {
    if (this.unreadable) {
      return gettext("This agent's model cannot read images. Remove the picture to send your message.");
    }
    if (this.totalBytes > this.maxMessageBytes) {
      return interpolate(
        gettext("The files attached to one message may take %(limit)s together; these take %(size)s."),
        { limit: formatBytes(this.maxMessageBytes), size: formatBytes(this.totalBytes) },
        true,
      );
    }
    if (this.uploading) return gettext("Wait until the files have uploaded, then send.");
    return "";
  }

  // The Send button waits for the files (uploads, a picture the model cannot read, too much together).
  get blocking() {
    return Boolean(this.blocker());
  }

  // True when a message may go now with the tray's files; otherwise the notice says why.
  ready({ followUp = false } = {}) {
    let reason = this.blocker();
    if (!reason && followUp && this.sendable().length) {
      reason = gettext("Files go with a new message, not with a follow-up: send them once the agent has answered.");
    }
    this.say(reason);
    return !reason;
  }

  // Tell the user something about the tray (until the tray changes).
  say(message) {
    this.attempted = message;
    this.render();
  }

  // The uploaded files to send, in the order they were added.
  sendable() {
    return this.chips
      .filter((chip) => chip.state === "stored" && chip.attachment)
      .map(({ attachment }) => ({
        id: attachment.id,
        name: attachment.name,
        kind: attachment.kind,
        format: attachment.format,
        content_type: attachment.content_type,
        size: attachment.size,
      }));
  }

  // The message went with the files: empty the tray (the files are the message's now, nothing deleted).
  clear() {
    for (const chip of this.chips) if (chip.xhr) chip.xhr.abort();
    this.chips = [];
    this.tray.replaceChildren();
    this.attempted = "";
    this.changed();
  }

  // The server refused the message sent with these files: offer them again, those still pending.
  restore(attachments) {
    for (const attachment of attachments || []) {
      if (this.chips.some((chip) => chip.attachment && chip.attachment.id === attachment.id)) continue;
      const chip = this.addChip(new Chip({ attachment, onRemove: (c) => this.remove(c) }));
      chip.stored(attachment);
      if (attachment.kind === "image" && !this.readsImages) this.markUnreadable(chip);
      this.checkStillPending(chip);
    }
    this.changed();
  }

  async checkStillPending(chip) {
    const found = await apiRequest(`${this.uploadUrl}${encodeURIComponent(chip.attachment.id)}/`);
    if (found.ok ? found.data?.status === "pending" : found.status !== 404) return;
    this.drop(chip); // sent meanwhile, or gone (the server's refusal said so)
  }

  disable() {
    this.disabled = true;
    this.pickerButton.disabled = true;
  }

  // -- adding files ------------------------------------------------------------------------------
  add(files, { pasted = false } = {}) {
    if (this.disabled) return;
    for (const original of Array.from(files || [])) {
      const file =
        pasted && original.type.startsWith("image/")
          ? new File([original], pastedName(original), { type: original.type, lastModified: Date.now() })
          : original;
      const chip = this.addChip(new Chip({ file, onRemove: (c) => this.remove(c) }));
      if (!this.readsImages && looksLikeImage(file)) this.markUnreadable(chip);
      else if (file.size > this.maxFileBytes) {
        chip.setState("refused");
        chip.say(
          interpolate(gettext("The file is larger than the limit of %(limit)s for one file."), { limit: formatBytes(this.maxFileBytes) }, true),
        );
      } else this.upload(chip);
    }
    this.changed();
  }

  addChip(chip) {
    chip.setState("uploading");
    this.chips.push(chip);
    this.tray.append(chip.el);
    return chip;
  }

  markUnreadable(chip) {
    chip.setState("unreadable");
    chip.say(gettext("This agent's model cannot read images"));
  }

  upload(chip) {
    const xhr = new XMLHttpRequest();
    chip.xhr = xhr;
    xhr.open("POST", this.uploadUrl);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable && event.total) chip.progress(event.loaded / event.total);
    });
    xhr.addEventListener("load", () => {
      chip.xhr = null;
      this.uploaded(chip, xhr.status, parseJson(xhr.responseText));
    });
    xhr.addEventListener("error", () => {
      chip.xhr = null;
      this.refuse(chip, gettext("The server cannot be reached. Try again in a moment."));
    });
    const form = new FormData();
    form.append("files", chip.file, chip.name);
    xhr.send(form);
  }

  // The server's answer: {"files": [{"outcome": "stored"|"refused", "code", "message", "attachment"}]},
  // or a refusal of the whole request ({"detail", "code"}).
  uploaded(chip, status, body) {
    if (!this.chips.includes(chip)) return; // removed meanwhile
    const line = body && Array.isArray(body.files) ? body.files[0] : null;
    if (line && line.outcome === "stored" && line.attachment) {
      chip.stored(line.attachment);
      if (line.attachment.kind === "image" && !this.readsImages) this.markUnreadable(chip);
      this.changed();
    } else if (line && line.message) {
      this.refuse(chip, line.message);
    } else if (status === 413) {
      this.refuse(chip, gettext("The file is larger than the server accepts."));
    } else {
      this.refuse(chip, errorMessage(body) || gettext("The upload failed. Try again."));
    }
  }

  refuse(chip, message) {
    if (!this.chips.includes(chip)) return;
    chip.setState("refused");
    chip.say(message);
    this.changed();
  }

  // -- removing files ----------------------------------------------------------------------------
  async remove(chip) {
    if (chip.state === "removing") return;
    if (chip.xhr) {
      chip.xhr.abort(); // an upload the server finishes anyway stays pending and is swept later
      chip.xhr = null;
    }
    if (chip.attachment && chip.state !== "refused") {
      const before = chip.state;
      chip.setState("removing");
      this.changed();
      const done = await apiRequest(`${this.uploadUrl}${encodeURIComponent(chip.attachment.id)}/`, { method: "DELETE" });
      if (!done.ok && done.status !== 404) {
        chip.setState(before);
        chip.say(done.message);
        this.changed();
        return;
      }
    }
    this.drop(chip);
  }

  drop(chip) {
    const index = this.chips.indexOf(chip);
    if (index < 0) return;
    this.chips.splice(index, 1);
    chip.el.remove();
    this.changed();
  }

  // -- paste and drop ----------------------------------------------------------------------------
  onPaste(event) {
    const data = event.clipboardData;
    if (!data || !data.files || !data.files.length) return;
    // Text copied with a picture of itself (from an office document) pastes as text.
    if (Array.from(data.types || []).includes("text/plain")) return;
    event.preventDefault();
    this.add(data.files, { pasted: true });
  }

  onDragEnter(event) {
    if (!carriesFiles(event) || this.disabled) return;
    event.preventDefault();
    this.dragDepth += 1;
    this.dropZone.classList.add("dropping");
  }

  onDragOver(event) {
    if (!carriesFiles(event) || this.disabled) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    this.dropZone.classList.add("dropping");
  }

  onDragLeave() {
    this.dragDepth = Math.max(0, this.dragDepth - 1);
    if (!this.dragDepth) this.dropZone.classList.remove("dropping");
  }

  onDrop(event) {
    this.dragDepth = 0;
    this.dropZone.classList.remove("dropping");
    if (!carriesFiles(event) || this.disabled) return;
    event.preventDefault();
    this.add(event.dataTransfer.files);
  }

  // -- state -------------------------------------------------------------------------------------
  changed() {
    this.refresh();
    this.onChange();
  }

  // What the user was told still holds, or goes (the uploads finished, the picture was removed, …).
  refresh() {
    this.attempted = this.attempted ? this.blocker() : "";
    this.render();
  }

  render() {
    this.tray.hidden = !this.chips.length;
    const reason = this.attempted || (this.unreadable ? this.blocker() : "");
    this.notice.textContent = reason;
    this.notice.hidden = !reason;
  }
}

function carriesFiles(event) {
  return Boolean(event.dataTransfer && Array.from(event.dataTransfer.types || []).includes("Files"));
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
