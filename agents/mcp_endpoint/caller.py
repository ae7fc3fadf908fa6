"""Who calls the MCP endpoint: a Bearer API key of a member of the organisation named in the path.

The key is checked by :func:`platform_core.identity.api_keys.authentication.api_token_authenticate` (the same check as the
REST API and the websocket). No key or an unknown, revoked or expired one: 401. A key that does not reach
the organisation (its user is not a member, or it is another organisation's key), or no such
organisation: 404, the same answer, so a key cannot probe which organisations exist. A key without the
``chat`` scope: 403. An address that sent too many wrong keys: 429 with ``Retry-After``, whatever key it
sends (:mod:`platform_core.identity.api_keys.throttle`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import translation

from agents.runs.language import interface_language
from platform_core.identity.api_keys.authentication import api_token_authenticate, throttled_message
from platform_core.identity.api_keys.throttle import KeyThrottled
from platform_core.models import ApiKeyScope, Membership, Organization

#: The ASGI scope key under which the endpoint finds the admitted caller.
CALLER_SCOPE_KEY = "agent_platform.mcp_caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """An admitted caller: the key's user in one organisation."""

    user_id: int
    organization_id: int
    organization_slug: str
    key_id: int
    language: str
    key_expires_at: datetime | None = None
    # The caller's interface language ("": its Accept-Language names none): its runs' stop messages are
    # in it (``language``, for the server's own messages, falls back to the default).
    interface_language: str = ""


@dataclass(frozen=True, slots=True)
class CallerRefused:
    """Not admitted: the HTTP status (401, 403, 404 or 429), a short reason, and for 429 when to retry."""

    status: int
    error: str
    description: str
    retry_after: int | None = None


CallerAdmission = Caller | CallerRefused


def caller_admit(
    *, raw_key: str | None, organization_slug: str, accept_language: str = "", ip_address: str | None = None
) -> CallerAdmission:
    """Admit the holder of ``raw_key`` to ``organization_slug``'s MCP server (sync: database).

    The key must reach the organisation (a personal key of a member, or the organisation's own key) and
    carry the ``chat`` scope: every tool call starts a run.
    """
    if not raw_key:
        return CallerRefused(401, "invalid_token", "Authorization: Bearer <API key> is required.")
    credential = api_token_authenticate(raw_key, ip_address=ip_address)
    if isinstance(credential, KeyThrottled):
        return CallerRefused(429, "rate_limited", throttled_message(credential), credential.retry_after)
    if credential is None:
        return CallerRefused(401, "invalid_token", "The API key is unknown, revoked or expired.")
    organization = Organization.objects.filter(slug=organization_slug).only("pk", "slug").first()
    user = credential.user
    if (
        organization is None
        or not credential.reaches(organization.pk)
        or not Membership.objects.filter(user_id=user.pk, organization_id=organization.pk).exists()
    ):
        return CallerRefused(404, "not_found", "No such organisation.")
    if not credential.allows(ApiKeyScope.CHAT):
        return CallerRefused(403, "insufficient_scope", "The API key needs the chat scope.")
    return Caller(
        user_id=user.pk,
        organization_id=organization.pk,
        organization_slug=organization.slug,
        key_id=credential.key.pk,
        language=language_from_header(accept_language),
        key_expires_at=credential.key.expires_at,
        interface_language=interface_language(accept_language=accept_language),
    )


def language_from_header(value: str) -> str:
    """The first supported language of an ``Accept-Language`` header, else the default language."""
    for part in value.split(","):
        code = part.split(";")[0].strip().lower()
        if not code:
            continue
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return translation.get_language() or "en"
