// A tiny DOM builder. Text always goes in as text nodes: nothing here parses HTML.

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
