// Translation helpers: Django's JavaScript catalog (/jsi18n/) defines window.gettext and friends.
// Each user-facing string is a literal passed straight to gettext, so makemessages -d djangojs finds it.

export function gettext(msgid) {
  return typeof window.gettext === "function" ? window.gettext(msgid) : msgid;
}

export function ngettext(singular, plural, count) {
  if (typeof window.ngettext === "function") return window.ngettext(singular, plural, count);
  return count === 1 ? singular : plural;
}

// interpolate("%(n)s tools", {n: 3}, true) or interpolate("%s tools", [3]).
export function interpolate(format, values, named = false) {
  if (typeof window.interpolate === "function") return window.interpolate(format, values, named);
  if (named) return format.replace(/%\(\w+\)s/g, (m) => String(values[m.slice(2, -2)]));
  let i = 0;
  return format.replace(/%s/g, () => String(values[i++]));
}

function locale() {
  return document.documentElement.lang || undefined;
}

export function formatNumber(value) {
  return new Intl.NumberFormat(locale()).format(value || 0);
}

// Seconds as "0.4 s", "12 s" or "2 min 5 s".
export function formatDuration(seconds) {
  const s = Number(seconds) || 0;
  if (s < 10) return interpolate(gettext("%s s"), [s.toFixed(1)]);
  if (s < 60) return interpolate(gettext("%s s"), [Math.round(s)]);
  const minutes = Math.floor(s / 60);
  return interpolate(gettext("%(min)s min %(sec)s s"), { min: minutes, sec: Math.round(s - minutes * 60) }, true);
}

// A file size as people read it: "340 bytes", "12 kB", "4.5 MB" (powers of 1,024, as the server's limits).
const SIZE_UNITS = ["kilobyte", "megabyte", "gigabyte", "terabyte"];
export function formatBytes(bytes) {
  let value = Math.max(0, Number(bytes) || 0);
  if (value < 1024) return interpolate(ngettext("%s byte", "%s bytes", value), [formatNumber(value)]);
  let unit = -1;
  while (value >= 1024 && unit < SIZE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return new Intl.NumberFormat(locale(), {
    style: "unit",
    unit: SIZE_UNITS[unit],
    unitDisplay: "short",
    maximumFractionDigits: value < 10 ? 1 : 0,
  }).format(value);
}
