"""Who may chat over HTTP: a signed-in member (not only a superuser) of the URL's organisation whose
credential allows chatting.

An API key (``request.auth`` with ``scopes``, :class:`platform_core.identity.api_keys.scopes.ApiKeyCredential`)
must have the ``chat`` scope; an organisation's key (``request.auth.organization``) reaches only its
organisation. Sessions carry no scopes and may chat. The org routes also set ``api_key_scopes`` for the
org routes' own scope check (``HasApiKeyScope``), so a chat-only key may read its run's stream.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.http import Http404
from django.utils.translation import gettext_lazy as _
from rest_framework import permissions
from rest_framework.request import Request

CHAT_SCOPE = "chat"


def key_organization_id(request: Request) -> int | None:
    """The organisation the request's API key is bound to (``None``: a personal key or a session)."""
    organization = getattr(request.auth, "organization", None)
    if organization is not None:
        return int(organization.pk)
    value = getattr(request.auth, "organization_id", None)
    return int(value) if value is not None else None


class HasChatScope(permissions.BasePermission):
    """The credential allows chatting (and, for an organisation's key, in this organisation: else 404)."""

    accepted: ClassVar[frozenset[str]] = frozenset({CHAT_SCOPE})
    message = _("This API key lacks the chat scope.")

    def has_permission(self, request: Request, view: Any) -> bool:
        scopes = getattr(request.auth, "scopes", None)
        if scopes is not None and not self.accepted & set(scopes):
            return False
        org = getattr(request, "org", None)
        if org is None:
            return True
        bound = key_organization_id(request)
        # Chat is for members (a superuser who is not one is refused, as by the websocket), and an
        # organisation's key reaches only its organisation: both get the 404 of a missing organisation.
        if (bound is not None and org.pk != bound) or getattr(request, "org_membership", None) is None:
            raise Http404("No such organisation.")
        return True


class HasChatOrReadScope(HasChatScope):
    """Listing what one may chat with: a ``chat`` or a ``read`` key."""

    accepted = frozenset({CHAT_SCOPE, "read"})
    message = _("This API key lacks the chat or read scope.")
