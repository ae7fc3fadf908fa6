// Same-origin JSON requests to the REST API with the session's CSRF token. A refused request comes
// back as { ok: false, message } with the server's own (translated) reason, never as an exception.

import { gettext } from "./chat-i18n.js";

export function csrfToken() {
  const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
  if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
  const field = document.querySelector("input[name=csrfmiddlewaretoken]");
  return field ? field.value : "";
}

// The first message of a DRF error body: {"detail": "..."} or {"field": ["..."]}.
export function errorMessage(body) {
  if (!body || typeof body !== "object") return "";
  if (typeof body.detail === "string") return body.detail;
  for (const value of Object.values(body)) {
    if (Array.isArray(value) && typeof value[0] === "string") return value[0];
    if (typeof value === "string") return value;
  }
  return "";
}

export async function apiRequest(url, { method = "GET", body = undefined } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    return { ok: false, status: 0, message: gettext("The server cannot be reached. Try again in a moment.") };
  }
  let data = null;
  if (response.status !== 204) {
    try {
      data = await response.json();
    } catch {
      data = null;
    }
  }
  if (response.ok) return { ok: true, status: response.status, data };
  return { ok: false, status: response.status, data, message: errorMessage(data) || gettext("Something went wrong.") };
}
