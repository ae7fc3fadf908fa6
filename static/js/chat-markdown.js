// A small, safe markdown renderer for agent answers.
//
// Safety comes from the order of work: the whole source is HTML-escaped FIRST, so no character of the
// input can open a tag or an attribute. The renderer then only wraps escaped text in a fixed set of
// tags it writes itself: p, h3-h6, strong, em, del, code, pre, ul, ol, li, blockquote, hr, br, table,
// thead, tbody, tr, th, td, and a (http/https only, target=_blank rel="noopener noreferrer").
// Links with any other scheme (javascript:, data:, ...) are rendered as their plain text.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}&gt; ?/;
const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$/;
const SAFE_URL = /^https?:\/\/[^\s]+$/i;
const STASH = /\u0000(\d+)\u0000/g;

export function renderMarkdown(source) {
  const text = String(source ?? "")
    .replace(/\r\n?/g, "\n")
    .replace(/\u0000/g, "");
  return renderBlocks(escapeHtml(text).split("\n"));
}

function isTableStart(lines, i) {
  return (
    lines[i].includes("|") &&
    i + 1 < lines.length &&
    lines[i + 1].includes("-") &&
    TABLE_SEPARATOR.test(lines[i + 1])
  );
}

function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    LIST_ITEM.test(line) ||
    isTableStart(lines, i)
  );
}

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      i += 1;
    } else if ((m = line.match(FENCE))) {
      const body = [];
      i += 1;
      while (i < lines.length && !closesFence(lines[i], m[1])) body.push(lines[i++]);
      i += 1; // the closing fence (while streaming there may be none yet)
      const lang = m[2] ? ` data-lang="${m[2]}"` : "";
      out.push(`<pre class="md-code"><code${lang}>${body.join("\n")}</code></pre>`);
    } else if ((m = line.match(HEADING))) {
      const level = Math.min(6, m[1].length + 2);
      out.push(`<h${level}>${inline(m[2])}</h${level}>`);
      i += 1;
    } else if (RULE.test(line)) {
      out.push("<hr>");
      i += 1;
    } else if (isTableStart(lines, i)) {
      i = renderTable(lines, i, out);
    } else if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(lines[i++].replace(QUOTE, ""));
      out.push(`<blockquote>${renderBlocks(quoted)}</blockquote>`);
    } else if (LIST_ITEM.test(line)) {
      i = renderList(lines, i, out);
    } else {
      const para = [line];
      i += 1;
      while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) para.push(lines[i++]);
      out.push(`<p>${inline(para.join("\n"))}</p>`);
    }
  }
  return out.join("");
}

function closesFence(line, fence) {
  const trimmed = line.trim();
  return trimmed.length >= fence.length && trimmed === fence[0].repeat(trimmed.length);
}

function splitRow(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function renderTable(lines, i, out) {
  const header = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((cell) => {
    if (cell.startsWith(":") && cell.endsWith(":")) return ' class="al-center"';
    if (cell.endsWith(":")) return ' class="al-right"';
    return "";
  });
  const cells = (row, tag) =>
    header.map((_, c) => `<${tag}${aligns[c] || ""}>${inline(row[c] ?? "")}</${tag}>`).join("");
  let html = `<div class="md-table"><table><thead><tr>${cells(header, "th")}</tr></thead><tbody>`;
  i += 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    html += `<tr>${cells(splitRow(lines[i]), "td")}</tr>`;
    i += 1;
  }
  out.push(`${html}</tbody></table></div>`);
  return i;
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

function renderList(lines, i, out) {
  const first = lines[i].match(LIST_ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  while (i < lines.length) {
    const line = lines[i];
    const m = line.match(LIST_ITEM);
    if (m && m[1].length === indent && /\d/.test(m[2]) === ordered) {
      items.push([m[3]]);
      i += 1;
    } else if (!line.trim()) {
      let j = i + 1;
      while (j < lines.length && !lines[j].trim()) j += 1;
      const next = j < lines.length ? lines[j].match(LIST_ITEM) : null;
      const sameList = next && next[1].length === indent && /\d/.test(next[2]) === ordered;
      if (j < lines.length && (sameList || indentOf(lines[j]) > indent)) i = j;
      else break;
    } else if (indentOf(line) > indent || (m === null && !startsBlock(lines, i))) {
      items[items.length - 1].push(line);
      i += 1;
    } else {
      break;
    }
  }
  const tag = ordered ? "ol" : "ul";
  const start = ordered && parseInt(first[2], 10) !== 1 ? ` start="${parseInt(first[2], 10)}"` : "";
  out.push(`<${tag}${start}>${items.map((item) => `<li>${renderItem(item)}</li>`).join("")}</${tag}>`);
  return i;
}

function renderItem([first, ...rest]) {
  if (!rest.length) return inline(first);
  const margin = Math.min(...rest.filter((l) => l.trim()).map(indentOf));
  const body = rest.map((l) => l.slice(Math.min(margin, indentOf(l))));
  let split = body.findIndex((_, k) => !body[k].trim() || startsBlock(body, k));
  if (split === -1) split = body.length;
  const text = inline([first, ...body.slice(0, split)].join("\n"));
  return split < body.length ? text + renderBlocks(body.slice(split)) : text;
}

// Inline markup of already-escaped text. Code spans and links are set aside first so that emphasis
// never reaches into them.
function inline(text) {
  const stash = [];
  const keep = (html) => `\u0000${stash.push(html) - 1}\u0000`;
  let s = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, __, code) => keep(`<code>${code}</code>`));
  s = s.replace(/\[([^[\]]+)\]\(\s*([^\s()]+)(?:\s+&quot;[^\n]*?&quot;)?\s*\)/g, (_, label, url) => {
    if (!SAFE_URL.test(url)) return label;
    return keep(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(label)}</a>`);
  });
  s = emphasis(s).replace(/\n/g, "<br>");
  // Stashed pieces may themselves contain stashed code (a code span inside a link label).
  for (let pass = 0; pass < 2 && s.includes("\u0000"); pass += 1) s = s.replace(STASH, (_, n) => stash[n]);
  return s;
}

function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^*\w])\*([^\s*](?:[^*\n]*?[^\s*])?)\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_([^\s_](?:[^_\n]*?[^\s_])?)_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
}
