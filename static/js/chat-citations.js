// Citations of a run's answer: the sources its knowledge-base searches returned (the `citations` of a
// step's done event), listed under the answer with a preview and a link to the document, and the
// answer's [n] marks turned into links to them. The document link opens only for people allowed to
// read it (the server checks).
import { el } from "./chat-dom.js";
import { gettext } from "./chat-i18n.js";

const MARK = /\[(\d{1,3})\]/g;

export class Citations {
  constructor(prefix) {
    this.prefix = prefix; // unique per turn: ids of the list items
    this.byNumber = new Map();
    this.el = el("section", { class: "citations", hidden: true });
  }

  // Take the citations of one step (a list of {number, title, location, preview, url}).
  add(citations) {
    if (!Array.isArray(citations)) return;
    for (const c of citations) {
      const number = Number(c && c.number);
      if (Number.isInteger(number) && number > 0) this.byNumber.set(number, c);
    }
    this.render();
  }

  id(number) {
    return `${this.prefix}-cite-${number}`;
  }

  render() {
    if (!this.byNumber.size) return;
    const items = [...this.byNumber.keys()].sort((a, b) => a - b).map((number) => {
      const c = this.byNumber.get(number);
      const title = String(c.title || gettext("Document"));
      const link = c.url ? el("a", { href: String(c.url), text: title, target: "_blank", rel: "noopener" }) : el("span", { text: title });
      const head = el("div", { class: "citation-source" }, el("span", { class: "citation-number", text: `[${number}]` }), " ", link);
      if (c.location) head.append(el("span", { class: "muted", text: ` · ${String(c.location)}` }));
      const preview = el("details", { class: "citation-preview" }, el("summary", { text: gettext("Passage") }), el("blockquote", { text: String(c.preview || "") }));
      return el("li", { id: this.id(number), class: "citation" }, head, preview);
    });
    this.el.replaceChildren(el("h4", { text: gettext("Sources") }), el("ol", { class: "citation-list" }, ...items));
    this.el.hidden = false;
  }

  // Turn the [n] marks of the rendered answer into links to their sources (text nodes only: never
  // inside code or an existing link).
  link(answerEl) {
    if (!this.byNumber.size) return;
    const walker = document.createTreeWalker(answerEl, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement.closest("a, code, pre") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const nodes = [];
    while (walker.nextNode()) if (MARK.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
    for (const node of nodes) {
      const parts = [];
      let last = 0;
      const text = node.nodeValue;
      for (const match of text.matchAll(MARK)) {
        const number = Number(match[1]);
        const c = this.byNumber.get(number);
        if (!c) continue;
        parts.push(document.createTextNode(text.slice(last, match.index)));
        parts.push(el("a", { class: "cite", href: `#${this.id(number)}`, title: `${c.title}${c.location ? " · " + c.location : ""}`, text: `[${number}]` }));
        last = match.index + match[0].length;
      }
      if (!parts.length) continue;
      parts.push(document.createTextNode(text.slice(last)));
      node.replaceWith(...parts);
    }
  }
}
