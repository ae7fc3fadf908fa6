"""The sign-in page's provider buttons: the deployment's configured providers, in settings order."""

from __future__ import annotations

from dataclasses import dataclass

from allauth.socialaccount.adapter import get_adapter
from django.http import HttpRequest
from django.utils.http import urlencode


@dataclass(frozen=True, slots=True)
class ProviderButton:
    """One provider a user can sign in with: its id, display name and login URL (POST)."""

    id: str
    name: str
    login_url: str


def provider_buttons(request: HttpRequest, *, next_url: str = "") -> list[ProviderButton]:
    """Every sign-in provider with an app configured for this deployment."""
    adapter = get_adapter()
    buttons: list[ProviderButton] = []
    for app in adapter.list_apps(request):
        provider = app.get_provider(request)
        url = provider.get_login_url(request)
        if next_url:
            url = f"{url}?{urlencode({'next': next_url})}"
        buttons.append(ProviderButton(id=provider.sub_id, name=provider_display_name(app), login_url=url))
    return buttons


def provider_display_name(app: object) -> str:
    """The name a user reads: Feishu's is translated, an OIDC provider's is the operator's ``name``."""
    from django.utils.translation import gettext

    if getattr(app, "provider", "") == "feishu":
        return gettext("Feishu")
    return str(getattr(app, "name", "") or getattr(app, "provider_id", ""))


def provider_names(request: HttpRequest, provider_ids: tuple[str, ...]) -> list[str]:
    """Display names of ``provider_ids`` (ids without a configured app are named by their id)."""
    names = {b.id: b.name for b in provider_buttons(request)}
    return [names.get(p, p) for p in provider_ids]
