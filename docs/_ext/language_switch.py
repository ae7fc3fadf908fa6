"""The sidebar's language switch: every page links to the same page in the other language's build.

The two builds live side by side (``<docs>/en/`` and ``<docs>/zh/``) with the same page names, so the
counterpart of ``<lang>/<page>.html`` is ``../<other>/<page>.html`` from the build's root.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

LANGUAGES = (("en", "English"), ("zh", "中文"))
TITLES = {"en": "Agent platform", "zh": "智能体平台"}


def build_language(sphinx_language: str) -> str:
    """The build's folder name: ``zh`` for any Chinese, else ``en``."""
    return "zh" if sphinx_language.lower().startswith("zh") else "en"


def _add_switch(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    current = build_language(app.config.language)
    to_root = context["pathto"]("index", 1).rsplit("index", 1)[0] or "./"  # the build's root, relative
    context["language_links"] = [
        {
            "code": code,
            "name": name,
            "current": code == current,
            "url": f"{to_root}../{code}/{pagename}.html",
        }
        for code, name in LANGUAGES
    ]


def _title_in_language(app: Sphinx, config: Any) -> None:
    """The site's title (the sidebar's brand, the window titles) in the build's language."""
    config.html_title = TITLES[build_language(config.language)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _title_in_language)
    app.connect("html-page-context", _add_switch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
