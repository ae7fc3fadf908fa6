"""Error pages a user meets: styled 404, 403 and 500 pages in both languages, never Django's debug page.

The corpus walks a wrong URL (signed in and not), another organisation's pages (404, the same as a
missing one) and a page the user's role may not open (403), in English and Simplified Chinese.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import RequestFactory
from django.urls import path
from django.utils import translation
from django.views import defaults

from platform_core.models import Role
from platform_core.wiring import urls as root_urls
from tests.factories import PASSWORD, member_of
from tests.platform_core.fresh_process import printed_after_setup

pytestmark = pytest.mark.django_db


HEADINGS = {
    404: {"en": "Page not found", "zh-hans": "页面不存在"},
    403: {"en": "You may not open this page", "zh-hans": "您无权打开此页面"},
    500: {"en": "Something went wrong", "zh-hans": "出错了"},
}
EXPIRED = {"en": "The form has expired", "zh-hans": "表单已过期"}
# What Django's technical and plain default pages say; a user never reads them.
DEBUG_TEXT = ["Traceback", "Using the URLconf", "DEBUG = True", "technical_", "The requested resource"]


@dataclass(frozen=True)
class ErrorCase:
    name: str
    status: int
    user: str | None  # a fixture name; None for an anonymous visitor
    url: str


CASES = [
    ErrorCase("wrong-url-anonymous", 404, None, "/no-such-page/"),
    ErrorCase("wrong-url-signed-in", 404, "member", "/no-such-page/"),
    ErrorCase("wrong-url-inside-an-org", 404, "member", "/o/acme/nothing-here/"),
    ErrorCase("foreign-org-chat", 404, "member", "/o/globex/chat/"),
    ErrorCase("foreign-org-approvals", 404, "org_admin", "/o/globex/approvals/"),
    ErrorCase("missing-org-chat", 404, "member", "/o/no-such-org/chat/"),
    ErrorCase("member-opens-the-approvals-inbox", 403, "member", "/o/acme/approvals/"),
]
LANGUAGES = {"en": "en-GB,en;q=0.9", "zh-hans": "zh-CN,zh;q=0.9"}


def _topbar(html: str) -> str:
    match = re.search(r'<header class="topbar">(.*?)</header>', html, re.S)
    assert match, "the page has no top bar"
    return match.group(1)


@pytest.mark.parametrize("language", list(LANGUAGES))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_error_pages_are_styled_and_translated(client, request, org, other_org, case, language):
    if case.user is not None:
        user = request.getfixturevalue(case.user)
        client.login(username=user.username, password=PASSWORD)
    response = client.get(case.url, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    html = response.content.decode()
    assert response.status_code == case.status
    assert f'<html lang="{language}">' in html
    assert HEADINGS[case.status][language] in html
    assert "css/app.css" in html and _topbar(html)
    assert not [text for text in DEBUG_TEXT if text in html]
    assert "Globex" not in html and 'href="/o/globex' not in html


def test_the_403_page_says_why_in_the_users_language(client, member, org):
    client.login(username=member.username, password=PASSWORD)
    html = client.get("/o/acme/approvals/", HTTP_ACCEPT_LANGUAGE=LANGUAGES["zh-hans"]).content.decode()
    with translation.override("zh-hans"):
        reason = translation.gettext("Only approvers, admins and owners can open the approvals inbox.")
    assert reason in html


def test_the_404_page_links_the_signed_in_users_own_organisation(client, member, org, other_org):
    client.login(username=member.username, password=PASSWORD)
    bar = _topbar(client.get("/o/globex/chat/").content.decode())
    assert 'href="/o/acme/chat/"' in bar and 'href="/o/globex' not in bar


def _boom(request):
    raise RuntimeError("the database is on fire")


urlpatterns = [path("boom/", _boom), *root_urls.urlpatterns]


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_the_500_page_renders_without_the_database_or_context_processors(language, django_assert_num_queries):
    request = RequestFactory().get("/boom/")
    with translation.override(language), django_assert_num_queries(0):
        response = defaults.server_error(request)
    html = response.content.decode()
    assert response.status_code == 500
    assert HEADINGS[500][language] in html and "css/app.css" in html and _topbar(html)
    assert "Server Error (500)" not in html


@pytest.mark.urls(__name__)
def test_an_unhandled_error_answers_the_styled_500_page(client):
    client.raise_request_exception = False
    response = client.get("/boom/", HTTP_ACCEPT_LANGUAGE=LANGUAGES["zh-hans"])
    html = response.content.decode()
    assert response.status_code == 500
    assert HEADINGS[500]["zh-hans"] in html and "on fire" not in html


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_form_without_its_csrf_token_answers_the_styled_403_page(language):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/login/", {"username": "x", "password": "y"}, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language]
    )
    html = response.content.decode()
    assert response.status_code == 403
    assert EXPIRED[language] in html and "css/app.css" in html and _topbar(html)
    assert "CSRF verification failed" not in html


def _settings_debug(env: dict[str, str]) -> str:
    code = "from django.conf import settings; print(settings.DEBUG)"
    return printed_after_setup(code, env, dropped=("DJANGO_", "DATABASE_", "REDIS_"))


def test_debug_is_off_unless_asked_for_so_make_run_shows_what_users_see():
    assert _settings_debug({}) == "False"
    assert _settings_debug({"DJANGO_DEBUG": "true"}) == "True"


# --- the top bar -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopbarCase:
    name: str
    role: str
    url: Callable[[str], str]  # from the org slug
    chat: bool
    approvals: bool


TOPBAR_CASES = [
    TopbarCase("member-home", Role.MEMBER, lambda slug: "/", True, False),
    TopbarCase("member-chat", Role.MEMBER, lambda slug: f"/o/{slug}/chat/", True, False),
    TopbarCase("approver-home", Role.APPROVER, lambda slug: "/", True, True),
    TopbarCase("approver-inbox", Role.APPROVER, lambda slug: f"/o/{slug}/approvals/", True, True),
    TopbarCase("admin-chat", Role.ADMIN, lambda slug: f"/o/{slug}/chat/", True, True),
    TopbarCase("owner-home", Role.OWNER, lambda slug: "/", True, True),
]


@pytest.mark.parametrize("case", TOPBAR_CASES, ids=[c.name for c in TOPBAR_CASES])
def test_the_top_bar_links_chat_and_approvals_for_those_allowed(client, org, case):
    user = member_of(org, case.role, username=f"u-{case.name}")
    client.login(username=user.username, password=PASSWORD)
    response = client.get(case.url(org.slug))
    assert response.status_code == 200
    bar = _topbar(response.content.decode())
    assert ('href="/o/acme/chat/"' in bar) is case.chat
    assert ('href="/o/acme/approvals/"' in bar) is case.approvals


def test_the_top_bar_follows_the_organisation_of_the_page(client, org, other_org):
    user = member_of(org, Role.MEMBER, username="two-orgs")
    member_of(other_org, Role.APPROVER, username="unused")
    from tests.factories import MembershipFactory

    MembershipFactory(organization=other_org, user=user, role=Role.APPROVER)
    client.login(username=user.username, password=PASSWORD)
    bar = _topbar(client.get("/o/globex/chat/").content.decode())
    assert 'href="/o/globex/chat/"' in bar and 'href="/o/globex/approvals/"' in bar
    assert "/o/acme/" not in bar
    bar = _topbar(client.get("/o/acme/chat/").content.decode())
    assert 'href="/o/acme/chat/"' in bar and "/approvals/" not in bar


def test_the_top_bar_marks_the_page_it_is_on(client, org, approver):
    client.login(username=approver.username, password=PASSWORD)
    bar = _topbar(client.get("/o/acme/approvals/").content.decode())
    assert re.search(r'<a href="/o/acme/approvals/"[^>]*aria-current="page"', bar)
    assert not re.search(r'<a href="/o/acme/chat/"[^>]*aria-current', bar)


def test_anonymous_visitors_get_no_organisation_links(client, org):
    bar = _topbar(client.get("/login/").content.decode())
    assert "/o/" not in bar


@pytest.mark.parametrize(
    "path", ["/static/css/app.css", "/static/js/language-switch.js", "/static/admin/js/SelectFilter2.js"]
)
def test_static_files_are_served_with_debug_off_without_collectstatic(client, settings, path):
    assert settings.DEBUG is False
    response = client.get(path)
    assert response.status_code == 200 and b"".join(response.streaming_content)
