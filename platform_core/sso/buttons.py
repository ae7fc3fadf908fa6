"""The sign-in page's provider buttons: the deployment's configured providers, in settings order."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from allauth.socialaccount import app_settings as socialaccount_settings
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


def provider_origins(request: HttpRequest) -> list[str]:
    """The origins the sign-in forms redirect to (Feishu's origin, each OIDC provider's ``server_url``
    origin): the page's ``form-action`` must allow them, or the browser stops the redirect."""
    origins: set[str] = set()
    feishu_base = socialaccount_settings.PROVIDERS.get("feishu", {}).get("BASE_URL") or ""
    for app in get_adapter().list_apps(request):
        url = feishu_base if app.provider == "feishu" else (app.settings or {}).get("server_url", "")
        parts = urlsplit(str(url))
        if parts.scheme in ("http", "https") and parts.netloc:
            origins.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(origins)


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
