"""What an API key may do: its scopes, the credential every Bearer authentication yields, and the scope a
request needs.

``read`` covers GET (and HEAD, OPTIONS) endpoints; ``chat`` starting runs, sending messages, deciding
approvals, the websocket chat and MCP agent calls; ``admin`` the admin-level routes (connectors,
policies, members, keys). A write that a view does not mark as chat needs ``admin``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rest_framework.permissions import SAFE_METHODS

from platform_core.models import ApiKey, ApiKeyScope, Organization

Scope = ApiKeyScope
ALL_SCOPES: frozenset[str] = frozenset(ApiKeyScope.values)


def scopes_normalise(scopes: Iterable[str]) -> list[str]:
    """``scopes`` in the canonical order (read, chat, admin), duplicates dropped; unknown ones raise."""
    wanted = set(scopes)
    unknown = wanted - ALL_SCOPES
    if unknown:
        raise ValueError(f"unknown scopes: {sorted(unknown)}")
    return [s for s in ApiKeyScope.values if s in wanted]


@dataclass(frozen=True, slots=True)
class ApiKeyCredential:
    """A live API key as authentication found it: the user it acts as (an organisation key's service
    user), its organisation (``None`` for a personal key) and its scopes."""

    key: ApiKey
    user: Any
    organization: Organization | None
    scopes: frozenset[str]

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyCredential:
        return cls(key=key, user=key.user, organization=key.organization, scopes=frozenset(key.scopes))

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    def reaches(self, organization_id: int) -> bool:
        """Whether the key may act in the organisation: any of its user's for a personal key, its own
        for an organisation key."""
        return self.organization is None or self.organization.pk == organization_id


def scope_required(*, method: str, view: Any) -> str:
    """The scope a request needs: a view's ``api_key_scopes[action]`` when set, else ``read`` for safe
    methods and the view's ``api_key_write_scope`` (``admin`` unless the view says ``chat``) for writes."""
    by_action = getattr(view, "api_key_scopes", None) or {}
    action = getattr(view, "action", None)
    if action in by_action:
        return str(by_action[action])
    if method.upper() in SAFE_METHODS:
        return Scope.READ
    return str(getattr(view, "api_key_write_scope", Scope.ADMIN))


def request_credential(request: Any) -> ApiKeyCredential | None:
    """The API key a DRF request was authenticated with (``None``: a session or no credential)."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKeyCredential) else None
