"""The documentation site at /docs/: the pages `make docs` built (Sphinx, docs/), one build per language.

``/docs/`` opens the build of the reader's language (the language the request resolved to, as on every
page); ``/docs/<en|zh>/<path>`` serves a file of that build and nothing outside it. Until the site is
built, its pages say how to build it.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.static import serve

DOCS_LANGUAGES = ("en", "zh")


def docs_language_for(language_code: str | None) -> str:
    """The docs build for a Django language code: ``zh`` for Chinese, else ``en``."""
    return "zh" if (language_code or "").lower().startswith("zh") else "en"


def docs_home(request: HttpRequest) -> HttpResponse:
    """Open the docs in the request's language."""
    language = docs_language_for(getattr(request, "LANGUAGE_CODE", None))
    return redirect("docs-page", language=language, path="index.html")


def docs_page(request: HttpRequest, language: str, path: str = "") -> HttpResponseBase:
    """A file of one language's build; a folder's ``index.html``; 503 with how to build when unbuilt."""
    if language not in DOCS_LANGUAGES:
        raise Http404("no such documentation language")
    root = Path(settings.DOCS_ROOT) / language
    if not (root / "index.html").is_file():
        return render(request, "docs_not_built.html", status=503)
    if path == "" or path.endswith("/"):
        path += "index.html"
    try:
        return serve(request, path, document_root=str(root))  # 404 for folders and missing files
    except SuspiciousFileOperation as exc:  # a path that climbs out of the language's build
        raise Http404("no such page") from exc
