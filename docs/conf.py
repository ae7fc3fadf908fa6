"""Sphinx configuration of the documentation site (``make docs``; docs/contributing/docs.md says why Sphinx).

One source tree, two builds: English, and Simplified Chinese (``-D language=zh_CN``) whose translated
pages come from ``docs/locale/zh_CN/LC_MESSAGES/*.po``; pages without a translation stay in English. The
REST reference is generated at build time from the live OpenAPI schema (``_ext/rest_reference.py``).
Everything the pages need is in the build: no CDN, no web fonts, search included.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import jieba

jieba.setLogLevel(logging.WARNING)  # the Chinese search's segmenter: no "building prefix dict" chatter

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "Agent platform"
author = "The agent platform's developers"
copyright = "the agent platform's developers"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "rest_reference",  # the REST reference from the live OpenAPI schema
    "language_switch",  # the English / 中文 switch in the sidebar
    "search_zh",  # the Chinese search page works (a Sphinx 9.0 stemmer name)
    "translation_coverage",  # lists what the Chinese guides still show in English
    "csp_safe",  # no eval in the built scripts (the platform's Content-Security-Policy)
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["locale"]
templates_path = ["_templates"]

# Strict: `make docs` passes -W (a warning fails the build), -n (every reference must resolve) and
# --keep-going (all warnings at once). A broken link between pages, a missing anchor, a page missing from
# the navigation or a navigation entry without a page each fail it.
nitpicky = True
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]
suppress_warnings: list[str] = []

# The Chinese build: gettext catalogues, one per page, compiled by Sphinx at build time.
language = "en"
locale_dirs = ["locale/"]
gettext_compact = False
gettext_uuid = False
gettext_location = False

html_theme = "furo"
html_title = "Agent platform"
html_static_path = ["_static"]
html_css_files = ["docs.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_search_language = None  # follows `language`; Chinese search segments words with jieba
html_sidebars = {
    "**": [
        "sidebar/brand.html",
        "sidebar/language.html",
        "sidebar/search.html",
        "sidebar/scroll-start.html",
        "sidebar/navigation.html",
        "sidebar/scroll-end.html",
    ]
}
html_theme_options = {
    "navigation_with_keys": True,
    "top_of_page_buttons": [],
}
