// The conversation list (chat sidebar and chat home): search over all of the user's conversations
// (the API's ?search=), rename in place, delete after a confirmation, and times that read naturally.

import { apiRequest } from "./chat-api.js";
import { el } from "./chat-dom.js";
import { gettext, interpolate } from "./chat-i18n.js";
import { keepTimesFresh, refreshTimes } from "./chat-time.js";

const SEARCH_DELAY_MS = 250;
const TITLE_LIMIT = 200;

function titleOf(item) {
  return item.querySelector(".conversation-title").textContent;
}

export class ConversationList {
  // root: a [data-conversations] element; toast(message, kind); onRenamed(id, title); onDeleted(id).
  constructor(root, { toast, onRenamed = () => {}, onDeleted = () => {} }) {
    this.root = root;
    this.api = root.dataset.api;
    this.home = root.dataset.chatHome;
    this.current = root.dataset.current || "";
    this.toast = toast;
    this.onRenamed = onRenamed;
    this.onDeleted = onDeleted;
    this.list = root.querySelector(".conversation-list");
    this.empty = root.querySelector("[data-empty]");
    this.noMatch = root.querySelector("[data-no-match]");
    this.search = root.querySelector("[data-conversation-search]");
    this.shown = [...this.list.children]; // the page's own list, shown again when the search is cleared
    this.query = "";
    this.timer = null;
    this.list.addEventListener("click", (event) => this.onClick(event));
    this.search.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.runSearch(this.search.value.trim()), SEARCH_DELAY_MS);
    });
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.search.value) {
        event.stopPropagation();
        this.search.value = "";
        this.runSearch("");
      }
    });
    keepTimesFresh(root);
  }

  onClick(event) {
    const item = event.target.closest(".conversation-item");
    if (!item) return;
    if (event.target.closest("[data-rename]")) this.startRename(item);
    else if (event.target.closest("[data-delete]")) this.remove(item);
  }

  // -- search --------------------------------------------------------------------------------------
  async runSearch(query) {
    this.query = query;
    if (!query) {
      this.list.replaceChildren(...this.shown);
      this.showState();
      return;
    }
    const result = await apiRequest(`${this.api}?${new URLSearchParams({ search: query, limit: 50 })}`);
    if (query !== this.query) return; // a newer search was typed meanwhile
    if (!result.ok) {
      this.toast(result.message);
      return;
    }
    const items = Array.isArray(result.data) ? result.data : result.data.results || [];
    this.list.replaceChildren(...items.map((conversation) => this.item(conversation)));
    refreshTimes(this.list);
    this.showState();
  }

  showState() {
    const count = this.list.children.length;
    this.list.hidden = count === 0;
    this.empty.hidden = count > 0 || Boolean(this.query);
    this.noMatch.hidden = count > 0 || !this.query;
  }

  item(conversation) {
    const id = String(conversation.id);
    const current = id === this.current;
    const link = el(
      "a",
      { href: `${this.home}${id}/`, class: current ? "conversation-link current" : "conversation-link", "aria-current": current ? "page" : null },
      el("span", { class: "conversation-title", text: conversation.title || gettext("New conversation") }),
      el(
        "span",
        { class: "conversation-meta muted" },
        `${conversation.agent_name} · `,
        el("time", { datetime: conversation.updated_at, "data-relative": true }),
      ),
    );
    const actions = el(
      "span",
      { class: "conversation-actions" },
      el("button", { type: "button", class: "icon-button conversation-action", "data-rename": true, title: gettext("Rename"), "aria-label": gettext("Rename"), text: "✎" }),
      el("button", { type: "button", class: "icon-button conversation-action", "data-delete": true, title: gettext("Delete"), "aria-label": gettext("Delete"), text: "×" }),
    );
    return el("li", { class: "conversation-item", dataset: { id } }, link, actions);
  }

  // A conversation this page just created (its first message was sent): on top, as the current one.
  prepend(conversation) {
    this.current = String(conversation.id);
    for (const node of this.list.querySelectorAll(".conversation-link.current")) {
      node.classList.remove("current");
      node.removeAttribute("aria-current");
    }
    const item = this.item(conversation);
    this.shown.unshift(item);
    if (!this.query) this.list.prepend(item);
    refreshTimes(item);
    this.showState();
    return item;
  }

  setTitle(id, title) {
    for (const node of this.root.querySelectorAll(`.conversation-item[data-id="${CSS.escape(id)}"] .conversation-title`)) {
      node.textContent = title;
    }
  }

  // -- rename --------------------------------------------------------------------------------------
  startRename(item) {
    if (item.querySelector(".rename-form")) return;
    const link = item.querySelector(".conversation-link");
    const old = titleOf(item);
    const input = el("input", { type: "text", class: "rename-input", value: old, maxlength: String(TITLE_LIMIT), "aria-label": gettext("New title"), required: true });
    const error = el("span", { class: "rename-error", role: "alert", hidden: true });
    const form = el(
      "form",
      { class: "rename-form" },
      input,
      el("button", { type: "submit", class: "button small", text: gettext("Save") }),
      el("button", { type: "button", class: "link small", "data-cancel": true, text: gettext("Cancel") }),
      error,
    );
    const close = () => {
      form.remove();
      link.hidden = false;
      item.classList.remove("renaming");
    };
    form.querySelector("[data-cancel]").addEventListener("click", close);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        close();
      }
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const title = input.value.trim();
      if (!title) {
        error.textContent = gettext("The title is empty.");
        error.hidden = false;
        return;
      }
      const result = await apiRequest(`${this.api}${item.dataset.id}/`, { method: "PATCH", body: { title } });
      if (!result.ok) {
        error.textContent = result.message;
        error.hidden = false;
        return;
      }
      this.setTitle(item.dataset.id, result.data.title);
      close();
      this.onRenamed(item.dataset.id, result.data.title);
    });
    link.hidden = true;
    item.classList.add("renaming");
    item.prepend(form);
    input.focus();
    input.select();
  }

  // -- delete --------------------------------------------------------------------------------------
  async remove(item) {
    const question = interpolate(gettext("Delete the conversation “%s”? This cannot be undone."), [titleOf(item)]);
    if (!window.confirm(question)) return;
    const id = item.dataset.id;
    const result = await apiRequest(`${this.api}${id}/`, { method: "DELETE" });
    if (!result.ok && result.status !== 404) {
      this.toast(result.message);
      return;
    }
    this.shown = this.shown.filter((node) => node.dataset.id !== id);
    for (const node of this.root.querySelectorAll(`.conversation-item[data-id="${CSS.escape(id)}"]`)) node.remove();
    this.showState();
    this.toast(gettext("The conversation was deleted."), "info");
    if (id === this.current) {
      this.onDeleted(id);
      window.location.assign(this.home);
    }
  }
}
