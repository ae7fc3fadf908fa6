// Relative times that read naturally in the page's language: "just now", "5 minutes ago", "yesterday",
// then dates. Intl does the wording (Intl.RelativeTimeFormat with numeric: "auto" says "yesterday").

import { gettext } from "./chat-i18n.js";

const MINUTE = 60 * 1000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function locale() {
  return document.documentElement.lang || undefined;
}

function startOfDay(date) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
}

// `date` relative to `now` (both Dates).
export function relativeTime(date, now = new Date(), lang = locale()) {
  const elapsed = now.getTime() - date.getTime();
  if (Number.isNaN(elapsed)) return "";
  if (elapsed < MINUTE) return gettext("just now");
  const words = new Intl.RelativeTimeFormat(lang, { numeric: "auto" });
  if (elapsed < HOUR) return words.format(-Math.floor(elapsed / MINUTE), "minute");
  const days = Math.round((startOfDay(now) - startOfDay(date)) / DAY);
  if (days === 0) return words.format(-Math.floor(elapsed / HOUR), "hour");
  if (days < 7) return words.format(-days, "day");
  const options = { month: "short", day: "numeric" };
  if (date.getFullYear() !== now.getFullYear()) options.year = "numeric";
  return new Intl.DateTimeFormat(lang, options).format(date);
}

// Rewrite every <time datetime data-relative> under `root`; its title keeps the full date and time.
export function refreshTimes(root = document) {
  const now = new Date();
  for (const node of root.querySelectorAll("time[data-relative]")) {
    const date = new Date(node.getAttribute("datetime"));
    if (Number.isNaN(date.getTime())) continue;
    node.textContent = relativeTime(date, now);
    node.title = new Intl.DateTimeFormat(locale(), { dateStyle: "medium", timeStyle: "short" }).format(date);
  }
}

export function keepTimesFresh(root = document) {
  refreshTimes(root);
  setInterval(() => refreshTimes(root), MINUTE);
}
