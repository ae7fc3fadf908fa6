"""Check every internal link of a built documentation site: the file exists and so does its anchor.

``python docs/check_links.py var/docs`` walks every HTML file under the folder, reads each ``href`` and
``src`` that stays on the site (no scheme, not ``mailto:``), and fails, listing them all, when one points
to a file that is not there or to an ``#anchor`` that the target page does not define. The links between
the two languages' builds are checked too, as they sit side by side under the folder.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> list[str]:
    """``page: link (why)`` for every internal link of the site under ``site`` that does not resolve."""
    site = site.resolve()
    pages = {path: _parse(path) for path in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            if parts.path.startswith("/"):
                problems.append(
                    f"{path.relative_to(site)}: {link} (absolute path: the site must be relocatable)"
                )
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_relative_to(site) or not target.exists():
                problems.append(f"{path.relative_to(site)}: {link} (no such file)")
                continue
            anchor = unquote(parts.fragment)
            if anchor and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if anchor not in ids:
                    problems.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "var/docs")
    if not any(site.rglob("*.html")):
        print(f"no HTML under {site}: build the site first (make docs)", file=sys.stderr)
        return 2
    problems = broken_links(site)
    for problem in problems:
        print(problem, file=sys.stderr)
    count = sum(1 for _ in site.rglob("*.html"))
    print(f"checked the internal links of {count} pages: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
