"""What a social login tells the organisation rules: provider, account id, tenant, trusted e-mails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platform_core.sso.providers import FEISHU


@dataclass(frozen=True, slots=True)
class SsoIdentity:
    """An account at a sign-in provider. ``provider`` is ``feishu`` or an OIDC provider's id.

    ``trusted_emails`` are the addresses a rule may match a domain on and an existing account may be
    found by: an OIDC provider's verified addresses, a Feishu tenant's enterprise address.
    """

    provider: str
    uid: str
    name: str = ""
    tenant_key: str = ""
    open_id: str = ""
    union_id: str = ""
    trusted_emails: tuple[str, ...] = ()

    @property
    def email_domains(self) -> frozenset[str]:
        return frozenset(e.rpartition("@")[2].lower() for e in self.trusted_emails if "@" in e)


def identity_from_sociallogin(sociallogin: Any) -> SsoIdentity:
    """The identity of an allauth ``SocialLogin`` (its account's provider data)."""
    account = sociallogin.account
    data: dict[str, Any] = account.extra_data or {}
    if account.provider == FEISHU:
        enterprise = str(data.get("enterprise_email") or "").strip().lower()
        return SsoIdentity(
            provider=FEISHU,
            uid=str(account.uid),
            name=str(data.get("name") or ""),
            tenant_key=str(data.get("tenant_key") or ""),
            open_id=str(data.get("open_id") or account.uid),
            union_id=str(data.get("union_id") or ""),
            trusted_emails=(enterprise,) if enterprise else (),
        )
    verified = tuple(
        e.email.strip().lower()
        for e in sociallogin.email_addresses
        if getattr(e, "verified", False) and e.email
    )
    claims = data.get("userinfo") or data.get("id_token") or data
    return SsoIdentity(
        provider=str(account.provider),  # an OIDC account's provider is its app's provider_id
        uid=str(account.uid),
        name=str(claims.get("name") or "") if isinstance(claims, dict) else "",
        trusted_emails=verified,
    )
