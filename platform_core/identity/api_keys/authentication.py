"""``Authorization: Bearer <API key>`` for the REST API, the websocket handshake and MCP.

:func:`api_token_authenticate` is the one entry point for every Bearer credential: it refuses revoked
and expired keys at once (nothing is cached) and returns an :class:`ApiKeyCredential` that carries the
key's user, organisation (organisation keys) and scopes. It also counts failed keys per client address
and refuses an address past the limit (:mod:`platform_core.identity.api_keys.throttle`): every entry
point that accepts keys (REST, HTTP chat, the OpenAI-compatible endpoint, MCP, the websocket handshake,
the chat pages) passes the caller's address as :mod:`platform_core.request_meta` determines it.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions

from platform_core.identity.api_keys.keys import api_key_credential
from platform_core.identity.api_keys.scopes import ApiKeyCredential
from platform_core.identity.api_keys.throttle import (
    KeyThrottled,
    api_key_failure_record,
    api_key_failures_throttled,
)
from platform_core.request_meta import client_ip

KeyAuthentication = ApiKeyCredential | KeyThrottled | None


def bearer_token_from_header(value: str | bytes | None) -> str | None:
    """The token in an ``Authorization`` header value, or None when it is not a Bearer header."""
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def api_token_authenticate(raw: str, *, ip_address: str | None) -> KeyAuthentication:
    """The credential of the live API key ``raw``, recording its use (and a first use from
    ``ip_address``, audited); None when unknown, revoked, expired or its user inactive (counted against
    ``ip_address``); :class:`KeyThrottled` when ``ip_address`` failed too often, whatever the key."""
    throttled = api_key_failures_throttled(ip_address=ip_address)
    if throttled is not None:
        return throttled
    credential = api_key_credential(raw=raw, ip_address=ip_address)
    if credential is None:
        api_key_failure_record(ip_address=ip_address)
    return credential


def throttled_message(throttled: KeyThrottled) -> str:
    """What a throttled caller is told (the ``Retry-After`` header says the same in seconds)."""
    return _("Too many failed API key attempts from this address; retry in %(seconds)s seconds.") % {
        "seconds": throttled.retry_after
    }


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """DRF authentication by API key: ``request.user`` is the key's user, ``request.auth`` its
    :class:`ApiKeyCredential` (scopes are enforced by ``HasApiKeyScope``)."""

    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiKeyCredential] | None:
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        raw = bearer_token_from_header(header)
        if raw is None:
            return None
        credential = api_token_authenticate(raw, ip_address=client_ip(request))
        if isinstance(credential, KeyThrottled):
            raise exceptions.Throttled(wait=credential.retry_after, detail=throttled_message(credential))
        if credential is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key.")
        return credential.user, credential

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
