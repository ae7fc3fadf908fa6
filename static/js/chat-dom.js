// A tiny DOM builder. Text always goes in as text nodes: nothing here parses HTML.

import { gettext } from "./chat-i18n.js";

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// A JSON value as readable text: objects pretty-printed, JSON strings parsed first.
export function prettyJson(value) {
  let data = value;
  if (typeof data === "string") {
    try {
      data = JSON.parse(data);
    } catch {
      return data;
    }
  }
  if (data === undefined) return "";
  try {
    return JSON.stringify(data, null, 2);
  } catch {
    return String(data);
  }
}

export function oneLine(value, limit = 90) {
  let text = typeof value === "string" ? value : prettyJson(value).replace(/\s*\n\s*/g, " ");
  if (text === "{}" || text === "[]") return "";
  if (text.length > limit) text = text.slice(0, limit - 1) + "…";
  return text;
}

// toaster(container)(message, kind): a dismissable notice that goes away by itself.
const TOAST_MS = 7000;
export function toaster(container) {
  return (message, kind = "error") => {
    const close = el("button", { type: "button", class: "toast-close", "aria-label": gettext("Dismiss"), text: "×" });
    const node = el("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, el("span", { text: message }), close);
    const remove = () => node.remove();
    close.addEventListener("click", remove);
    setTimeout(remove, TOAST_MS);
    container.append(node);
  };
}

// A user message that is very long shows its first lines only, with a button to show all of it.
const COLLAPSE_CHARS = 1200;
const COLLAPSE_LINES = 12;
export function collapseLongText(node, text) {
  node.classList.remove("collapsible", "collapsed");
  node.querySelector(":scope > .msg-expand")?.remove();
  const value = String(text ?? "");
  if (value.length <= COLLAPSE_CHARS && value.split("\n").length <= COLLAPSE_LINES) return;
  node.classList.add("collapsible", "collapsed");
  const button = el("button", { type: "button", class: "msg-expand link", "aria-expanded": "false", text: gettext("Show all") });
  button.addEventListener("click", () => {
    const collapsed = node.classList.toggle("collapsed");
    button.setAttribute("aria-expanded", String(!collapsed));
    button.textContent = collapsed ? gettext("Show all") : gettext("Show less");
  });
  node.append(button);
}
