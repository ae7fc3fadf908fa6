"""The deployment's single sign-on providers, read from the environment (no Django models here).

``FEISHU_SSO_APP_ID``/``FEISHU_SSO_APP_SECRET`` enable Feishu (or Lark) sign-in against
``FEISHU_SSO_BASE_URL`` (default ``FEISHU_BASE_URL``); ``OIDC_PROVIDERS`` is a JSON list of OpenID
Connect providers, each ``{"id", "name", "server_url", "client_id", "secret"}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

FEISHU = "feishu"
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True, slots=True)
class OIDCProviderConfig:
    """One OpenID Connect provider of the deployment."""

    id: str
    name: str
    server_url: str
    client_id: str
    secret: str


def parse_oidc_providers(raw: str | None) -> list[OIDCProviderConfig]:
    """``OIDC_PROVIDERS`` as configs; a malformed value fails at start-up with what is wrong."""
    if not raw or not raw.strip():
        return []
    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"OIDC_PROVIDERS is not valid JSON: {exc}") from exc
    if not isinstance(items, list):
        raise ImproperlyConfigured("OIDC_PROVIDERS must be a JSON list of objects")
    configs: list[OIDCProviderConfig] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise ImproperlyConfigured(f"OIDC_PROVIDERS[{n}] is not an object")
        missing = [k for k in ("id", "server_url", "client_id") if not str(item.get(k) or "").strip()]
        if missing:
            raise ImproperlyConfigured(f"OIDC_PROVIDERS[{n}] lacks {', '.join(missing)}")
        provider_id = str(item["id"]).strip()
        if not _ID.match(provider_id) or provider_id == FEISHU:
            raise ImproperlyConfigured(
                f"OIDC_PROVIDERS[{n}].id {provider_id!r}: use lower-case letters, digits, '-' and '_' "
                "(and not 'feishu')"
            )
        server_url = str(item["server_url"]).strip()
        if urlsplit(server_url).scheme not in ("http", "https"):
            raise ImproperlyConfigured(f"OIDC_PROVIDERS[{n}].server_url must be an http(s) URL")
        configs.append(
            OIDCProviderConfig(
                id=provider_id,
                name=str(item.get("name") or provider_id),
                server_url=server_url,
                client_id=str(item["client_id"]),
                secret=str(item.get("secret") or ""),
            )
        )
    if len({c.id for c in configs}) != len(configs):
        raise ImproperlyConfigured("OIDC_PROVIDERS: two providers have the same id")
    return configs


def socialaccount_providers(
    *,
    feishu_app_id: str | None,
    feishu_secret: str | None,
    feishu_base_url: str,
    oidc: list[OIDCProviderConfig],
) -> dict[str, Any]:
    """allauth's ``SOCIALACCOUNT_PROVIDERS`` for these providers (apps configured in settings).

    https://docs.allauth.org/en/latest/socialaccount/provider_configuration.html (``APPS`` in settings,
    ``provider_class`` to swap a provider's class).
    """
    feishu: dict[str, Any] = {
        "provider_class": "platform_core.sso.feishu.provider.PlatformFeishuProvider",
        "BASE_URL": feishu_base_url.rstrip("/"),
        "APPS": [],
    }
    if feishu_app_id and feishu_secret:
        feishu["APPS"] = [{"client_id": feishu_app_id, "secret": feishu_secret, "name": "Feishu"}]
    return {
        FEISHU: feishu,
        "openid_connect": {
            "OAUTH_PKCE_ENABLED": True,
            "APPS": [
                {
                    "provider_id": c.id,
                    "name": c.name,
                    "client_id": c.client_id,
                    "secret": c.secret,
                    "settings": {"server_url": c.server_url},
                }
                for c in oidc
            ],
        },
    }


def operator_sso_hosts(*, feishu_base_url: str, oidc: list[OIDCProviderConfig]) -> list[str]:
    """The hosts the operator configured for sign-in: trusted by the SSRF guard like ``FEISHU_BASE_URL``."""
    hosts = [urlsplit(feishu_base_url).hostname or ""] + [urlsplit(c.server_url).hostname or "" for c in oidc]
    return sorted({h.lower() for h in hosts if h})
