"""The Feishu provider class allauth registers for ``feishu`` (``provider_class`` in settings)."""

from __future__ import annotations

from typing import Any

from allauth.account.models import EmailAddress
from allauth.socialaccount.providers.feishu.provider import FeishuProvider

from platform_core.sso.feishu.views import PlatformFeishuOAuth2Adapter


class PlatformFeishuProvider(FeishuProvider):
    """Feishu sign-in on a configurable origin; its URLs and views come from this package."""

    oauth2_adapter_class = PlatformFeishuOAuth2Adapter

    def extract_common_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": data.get("name") or "",
            "email": data.get("enterprise_email") or data.get("email") or "",
        }

    def extract_email_addresses(self, data: dict[str, Any]) -> list[EmailAddress]:
        # Addresses a Feishu tenant reports are its own claim, not verified by us: never trusted to
        # match a local account on their own (the sign-in rules decide by tenant).
        email = data.get("enterprise_email") or data.get("email")
        return [EmailAddress(email=email, verified=False, primary=True)] if email else []
