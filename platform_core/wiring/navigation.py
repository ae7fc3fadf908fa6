"""The top bar's links: the chat, the person's memories and the approvals inbox of the organisation the user
is working in, and the user's API keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from hooks.selectors import DECIDER_ROLES
from platform_core.models import ADMIN_ROLES, Membership

Section = Literal["chat", "memories", "approvals", "members", "api_keys", ""]


@dataclass(frozen=True)
class TopbarLinks:
    """Where the top bar's Chat and Approvals point (``None`` hides a link) and which one is open."""

    chat_url: str | None = None
    approvals_url: str | None = None
    members_url: str | None = None
    current: Section = ""
    api_keys_url: str | None = None
    memories_url: str | None = None


NO_LINKS = TopbarLinks()


def page_section(url_name: str | None) -> Section:
    """The top bar's section of a named route: the chat pages, the approvals inbox, or neither."""
    name = url_name or ""
    if name.startswith("api-key"):
        return "api_keys"
    if name.startswith("members-"):
        return "members"
    if name.startswith("memories-"):
        return "memories"
    return "chat" if name.startswith("chat-") else "approvals" if name.startswith("approvals-") else ""


def topbar_links_for(
    *, user: User | AnonymousUser, org_slug: str | None, section: Section = ""
) -> TopbarLinks:
    """Links of the page's organisation when the user belongs to it, else of the user's only one.

    Only the user's own memberships are read, so another organisation's URL never shows up in the bar;
    with several organisations and none in the URL the home page is the chooser and the bar links none.
    """
    if not isinstance(user, User) or not user.is_authenticated:
        return NO_LINKS
    memberships = list(
        Membership.objects.filter(user=user)
        .order_by("organization__name")
        .values_list("organization__slug", "role")
    )
    chosen = next((m for m in memberships if m[0] == org_slug), None)
    on_its_page = chosen is not None
    if chosen is None and len(memberships) == 1:
        chosen = memberships[0]
    api_keys_url = reverse("api-keys")
    if chosen is None:
        return TopbarLinks(api_keys_url=api_keys_url, current="api_keys" if section == "api_keys" else "")
    slug, role = chosen
    return TopbarLinks(
        chat_url=reverse("chat-home", kwargs={"org_slug": slug}),
        memories_url=reverse("memories-page", kwargs={"org_slug": slug}),
        approvals_url=reverse("approvals-inbox", kwargs={"org_slug": slug})
        if role in DECIDER_ROLES
        else None,
        members_url=reverse("members-page", kwargs={"org_slug": slug}) if role in ADMIN_ROLES else None,
        current=section if on_its_page or section == "api_keys" else "",
        api_keys_url=api_keys_url,
    )


def topbar(request: HttpRequest) -> dict[str, object]:
    """Context processor: ``topbar``, read from the database only when a template shows it."""
    match = getattr(request, "resolver_match", None)
    org_slug = match.kwargs.get("org_slug") if match is not None else None
    section = page_section(match.url_name if match is not None else None)
    return {
        "topbar": SimpleLazyObject(
            lambda: topbar_links_for(user=request.user, org_slug=org_slug, section=section)
        )
    }
