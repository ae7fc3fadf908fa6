"""The Content-Security-Policy: every HTML page carries the strict policy, and no page needs more.

- Every page of a corpus (the web app, the approvals inbox, the browsable API, and the changelist, add,
  change, history and delete pages of every admin) answers with the same strict ``Content-Security-Policy`` header, with DEBUG on and off, and
  a production environment sends it too.
- No page and no template holds what that policy blocks: inline ``<script>`` or ``<style>``, ``style=``
  attributes, ``on*=`` event handlers or ``javascript:`` URLs. The browser test (tests/e2e/test_csp.py)
  proves the pages still work under the policy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib import admin
from django.test import override_settings
from django.urls import reverse

from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory
from tests.factories import TENANT_FACTORIES, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalRequestFactory
from tests.platform_core.test_settings import PRODUCTION

ROOT = Path(__file__).resolve().parents[2]

STRICT_POLICY = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "img-src": {"'self'", "data:"},
    "connect-src": {"'self'"},
    "object-src": {"'none'"},
    "base-uri": {"'self'"},
    "form-action": {"'self'"},
    "frame-ancestors": {"'none'"},
}
# Script types that are data, not code: the browser never runs them, so the policy does not apply.
DATA_SCRIPT_TYPES = {"application/json", "application/ld+json"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction"}


def parse_policy(header: str) -> dict[str, set[str]]:
    """``"a x y; b z"`` as ``{"a": {"x", "y"}, "b": {"z"}}``."""
    policy: dict[str, set[str]] = {}
    for directive in filter(None, (part.strip() for part in header.split(";"))):
        name, *sources = directive.split()
        policy[name.lower()] = set(sources)
    return policy


class _InlineCode(HTMLParser):
    """Collects what a strict policy blocks: inline scripts and styles, style attributes, event handlers."""

    def __init__(self, known_style_attributes: frozenset[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.known_style_attributes = known_style_attributes
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {name.lower(): value or "" for name, value in attrs}
        if tag == "script" and "src" not in named and named.get("type", "").lower() not in DATA_SCRIPT_TYPES:
            self.found.append(f"inline <script> at line {self.getpos()[0]}")
        if tag == "style":
            self.found.append(f"inline <style> at line {self.getpos()[0]}")
        for name, value in named.items():
            if (name == "style" and value not in self.known_style_attributes) or name.startswith("on"):
                self.found.append(f'<{tag} {name}="{value[:60]}"> at line {self.getpos()[0]}')
            if name in URL_ATTRIBUTES and value.strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}=javascript:...> at line {self.getpos()[0]}")


def inline_code(html: str, *, known_style_attributes: frozenset[str] = frozenset()) -> list[str]:
    """Every construct in ``html`` that ``script-src 'self'`` / ``style-src 'self'`` would block, but for
    the style attributes named known."""
    parser = _InlineCode(known_style_attributes)
    parser.feed(html)
    parser.close()
    return parser.found


@dataclass(frozen=True)
class World:
    org_slug: str
    conversation_id: str
    approval_id: str
    connector_id: int


@pytest.fixture
def world(client, org) -> World:
    """An org owner (an admin and an approver at once) signed in, with a conversation and an approval."""
    owner = member_of(org, Role.OWNER, username="csp-owner")
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    conversation = ConversationFactory(organization=org, user=owner, agent=agent)
    approval = ApprovalRequestFactory(organization=org, approver_users=[owner])
    connector = ConnectorFactory(organization=org)
    client.force_login(owner)
    return World(org.slug, str(conversation.pk), str(approval.pk), connector.pk)


@dataclass(frozen=True)
class Page:
    """One page of the corpus: its name, how to build its URL, and third-party style attributes it may
    keep (the policy ignores them; a stylesheet of ours gives their layout instead)."""

    name: str
    build: Callable[[World], str]
    known_style_attributes: frozenset[str] = frozenset()


# Django REST framework's browsable API floats two controls right in style attributes (base.html);
# static/css/api.css does the same from a file.
DRF_STYLE_ATTRIBUTES = frozenset({"float: right; margin-right: 10px"})


def _admin_pages() -> list[Page]:
    """The changelist and add page of every registered admin, and the change, history and delete pages of
    a row of its own."""
    pages = [Page("admin:index", lambda w: reverse("admin:index"))]
    for model in admin.site._registry:
        info = f"{model._meta.app_label}_{model._meta.model_name}"
        pages.append(Page(f"admin:{info}_changelist", lambda w, i=info: reverse(f"admin:{i}_changelist")))
        pages.append(Page(f"admin:{info}_add", lambda w, i=info: reverse(f"admin:{i}_add")))
        if model in TENANT_FACTORIES:
            for view in ("change", "history", "delete"):
                pages.append(Page(f"admin:{info}_{view}", lambda w, i=info, v=view: f"own:{v}:{i}"))
    pages.append(
        Page(
            "admin:connectors_connector_import_openapi",
            lambda w: reverse("admin:connectors_connector_import_openapi", args=[w.connector_id]),
        )
    )
    return pages


# The corpus of HTML pages: add each new page here.
PAGES: list[Page] = [
    Page("login", lambda w: reverse("login")),
    Page("home", lambda w: reverse("home")),
    Page("chat-home", lambda w: reverse("chat-home", kwargs={"org_slug": w.org_slug})),
    Page(
        "chat-conversation",
        lambda w: reverse(
            "chat-conversation", kwargs={"org_slug": w.org_slug, "conversation_id": w.conversation_id}
        ),
    ),
    Page("memories-page", lambda w: reverse("memories-page", kwargs={"org_slug": w.org_slug})),  # issue 36
    Page("approvals-inbox", lambda w: reverse("approvals-inbox", kwargs={"org_slug": w.org_slug})),
    Page(
        "approvals-inbox-detail",
        lambda w: reverse(
            "approvals-inbox-detail", kwargs={"org_slug": w.org_slug, "approval_id": w.approval_id}
        ),
    ),
    Page("api-browsable-agents", lambda w: f"/api/v1/orgs/{w.org_slug}/agents/", DRF_STYLE_ATTRIBUTES),
    Page(
        "api-browsable-connector",
        lambda w: f"/api/v1/orgs/{w.org_slug}/connectors/{w.connector_id}/",
        DRF_STYLE_ATTRIBUTES,
    ),
    *_admin_pages(),
]


def _url(world: World, org, page: Page) -> str:
    url = page.build(world)
    if url.startswith("own:"):  # an admin page of a row of the user's own organisation
        _, view, info = url.split(":")
        model = next(m for m in admin.site._registry if f"{m._meta.app_label}_{m._meta.model_name}" == info)
        return reverse(f"admin:{info}_{view}", args=[TENANT_FACTORIES[model](org).pk])
    return url


def _get_html(client, world: World, org, page: Page):
    response = client.get(_url(world, org, page), HTTP_ACCEPT="text/html")
    assert response.status_code in (200, 403), response.status_code
    assert response["Content-Type"].startswith("text/html")
    return response


def _assert_strict_policy(response) -> None:
    assert "Content-Security-Policy" in response, "the page has no Content-Security-Policy header"
    assert parse_policy(response["Content-Security-Policy"]) == STRICT_POLICY


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_html_page_carries_the_strict_policy_and_no_inline_code(client, world, org, page):
    response = _get_html(client, world, org, page)
    _assert_strict_policy(response)
    assert inline_code(response.content.decode(), known_style_attributes=page.known_style_attributes) == []


# The middleware does not look at the page: a sample shows DEBUG changes nothing.
DEBUG_SAMPLE = [
    p
    for p in PAGES
    if not p.name.startswith("admin:")
    or p.name in {"admin:index", "admin:agents_agent_change", "admin:hooks_approvalpolicy_add"}
]


@pytest.mark.django_db
@pytest.mark.parametrize("page", DEBUG_SAMPLE, ids=[p.name for p in DEBUG_SAMPLE])
def test_html_pages_carry_the_strict_policy_with_debug_on(client, world, org, page):
    with override_settings(DEBUG=True):
        response = _get_html(client, world, org, page)
    _assert_strict_policy(response)


def _project_templates() -> list[Path]:
    folders = [ROOT / "templates", *ROOT.glob("*/templates")]
    return sorted(path for folder in folders for path in folder.rglob("*.html"))


_TEMPLATE_INLINE = [
    (re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*application/(ld\+)?json)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"<style\b", re.I), "<style>"),
    (re.compile(r"\sstyle\s*=", re.I), "style= attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "on*= event handler"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
]


@pytest.mark.parametrize("template", _project_templates(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_holds_inline_script_style_or_handlers(template):
    """Templates a page walk may not reach (error branches, popups) are read as source too."""
    source = template.read_text()
    found = [
        f"{what} at line {source.count(chr(10), 0, match.start()) + 1}"
        for pattern, what in _TEMPLATE_INLINE
        for match in pattern.finditer(source)
    ]
    assert found == []


def test_the_policy_is_the_same_strict_one_in_production():
    """A production environment (DJANGO_ENV=production) sends the policy too: it is not a debug aid."""
    code = (
        "import django;django.setup();"
        "from django.test import Client, override_settings;"
        # The manifest of collected static files is not this test's subject.
        "storages={'default':{'BACKEND':'django.core.files.storage.FileSystemStorage'},"
        "'staticfiles':{'BACKEND':'django.contrib.staticfiles.storage.StaticFilesStorage'}};"
        "o=override_settings(STORAGES=storages);o.enable();"
        "from django.conf import settings;assert not settings.DEBUG;"
        "r=Client().get('/login/',secure=True,HTTP_HOST='agents.example.com');"
        "print(r.status_code);print(r.headers.get('Content-Security-Policy',''))"
    )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "REDIS_", "CELERY_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, **PRODUCTION},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    status, header = done.stdout.splitlines()[-2:]
    assert status == "200"
    assert parse_policy(header) == STRICT_POLICY


def test_a_report_uri_from_the_environment_joins_the_policy():
    code = (
        "import django;django.setup();from django.conf import settings as s;"
        "print(s.CONTENT_SECURITY_POLICY['DIRECTIVES'].get('report-uri'))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CSP_"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
            "CSP_REPORT_URI": "https://reports.example.com/csp",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["['https://reports.example.com/csp']"]


def test_the_inline_code_finder_sees_what_the_policy_blocks():
    """The page check above can fail: each blocked construct is found, data scripts and files are not."""
    html = (
        '<script>alert(1)</script><script src="/static/a.js"></script>'
        '<script type="application/json" id="d">{}</script><style>p{}</style>'
        '<p style="color:red" onclick="x()"><a href="javascript:void(0)">x</a></p>'
    )
    found = inline_code(html)
    assert [f.split(" at ")[0] for f in found] == [
        "inline <script>",
        "inline <style>",
        '<p style="color:red">',
        '<p onclick="x()">',
        "<a href=javascript:...>",
    ]
