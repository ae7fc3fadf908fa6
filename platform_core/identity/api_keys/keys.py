"""API keys: create (the raw key is returned once), revoke, record their use, and read them.

Every creation, first use from an IP address and revocation writes an audit row: an organisation key's
in its organisation, a personal key's in every organisation of its user (each of them is reachable with it).
An organisation key acts as a service user of its own (``api-key-…``), a member of that organisation
only with the role its scopes give, so everything it does (its runs and conversations, audit rows) is
attributable to the key and can never reach another organisation.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.audit.log import audit_log_write
from platform_core.identity.api_keys.scopes import ApiKeyCredential, Scope, scopes_normalise
from platform_core.models import ApiKey, ApiKeyAddress, ApiKeyScope, Membership, Organization, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SERVICE_USER_PREFIX = "api-key-"


@dataclass(frozen=True, slots=True)
class ApiKeyCreated:
    """A new key and its raw value, which is shown once and never stored."""

    key: ApiKey
    raw: str


def api_key_group(key_id: int) -> str:
    """The channel-layer group of everything open with key ``key_id`` (websockets, HTTP streams, MCP
    requests): told when it is revoked."""
    return f"api-key-{key_id}"


def _announce_revoked(key_id: int) -> None:
    """Tell everything open with the key (in any server process) that it is revoked: it closes at once."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(api_key_group(key_id), {"type": "api_key.revoked"})


def without_service_users(users: QuerySet[Any], *, path: str = "") -> QuerySet[Any]:
    """``users`` (or rows reaching a user through ``path``, e.g. ``"user__"``) without organisation keys'
    service users: they are managed on the API keys page, never chosen as approvers or listed as members."""
    return users.exclude(**{f"{path}api_keys__organization__isnull": False})


def is_service_user(user: User) -> bool:
    """Whether ``user`` is an organisation key's service user (never a person: never an approver)."""
    return ApiKey.objects.filter(user_id=user.pk, organization__isnull=False).exists()


def _audit_orgs(key: ApiKey) -> list[Organization]:
    if key.organization is not None:  # no query for a personal key: its organization_id is None
        return [key.organization]
    return list(Organization.objects.filter(memberships__user_id=key.user_id).order_by("pk"))


def _key_state(key: ApiKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "prefix": key.key_prefix,
        "kind": "organisation" if key.organization_id else "personal",
        "user": key.user.get_username(),
        "scopes": list(key.scopes),
        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
        "revoked": key.revoked,
    }


def _validated(scopes: Iterable[str], expires_at: datetime | None) -> list[str]:
    try:
        chosen = scopes_normalise(scopes)
    except ValueError:
        raise ValidationError({"scopes": _("Unknown scope.")}) from None
    if not chosen:
        raise ValidationError({"scopes": _("Choose at least one scope.")})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": _("The expiry must be in the future.")})
    return chosen


def _service_user(*, organization: Organization, name: str, scopes: list[str]) -> User:
    user = get_user_model().objects.create(
        username=f"{SERVICE_USER_PREFIX}{secrets.token_hex(6)}", first_name=name[:150]
    )
    user.set_unusable_password()
    user.save(update_fields=["password"])
    role = Role.ADMIN if Scope.ADMIN in scopes else Role.MEMBER
    Membership.objects.create(user=user, organization=organization, role=role)
    return user


def _issue(
    *,
    user: User,
    organization: Organization | None,
    created_by: User | None,
    name: str,
    scopes: list[str],
    expires_at: datetime | None,
) -> ApiKeyCreated:
    while True:
        raw = ApiKey.new_raw()
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    user=user,
                    organization=organization,
                    created_by=created_by if created_by is not None and created_by.is_authenticated else None,
                    name=name,
                    scopes=scopes,
                    expires_at=expires_at,
                    key_prefix=raw[:12],
                    key_hash=ApiKey.hash_raw(raw),
                )
        except IntegrityError:  # a hash collision of 256 random bits: draw again
            continue
        return ApiKeyCreated(key=key, raw=raw)


@transaction.atomic
def api_key_create(
    *,
    name: str,
    scopes: Iterable[str],
    actor: User | None,
    owner: User | None = None,
    organization: Organization | None = None,
    expires_at: datetime | None = None,
    ip_address: str | None = None,
) -> ApiKeyCreated:
    """Create a personal key of ``owner`` or, with ``organization``, an organisation key (with its own
    service user), audited. Callers check that ``actor`` may (an org key: an owner or admin of it)."""
    chosen = _validated(scopes, expires_at)
    name = (name or "").strip()[:100]
    if organization is not None:
        user = _service_user(organization=organization, name=name, scopes=chosen)
    elif owner is not None:
        user = owner
    else:
        raise ValueError("a personal key needs its owner")
    created = _issue(
        user=user,
        organization=organization,
        created_by=actor,
        name=name,
        scopes=chosen,
        expires_at=expires_at,
    )
    for org in _audit_orgs(created.key):
        audit_log_write(
            organization=org,
            actor=actor,
            action="api_key.created",
            target=created.key,
            after=_key_state(created.key),
            ip_address=ip_address,
        )
    return created


def api_token_issue(*, user: User, name: str = "") -> tuple[ApiKey, str]:
    """A personal API key of ``user`` with every scope and no expiry (the operator's and the tests'
    path), audited; the raw value is returned once and only its hash is stored."""
    created = api_key_create(name=name, scopes=ApiKeyScope.values, actor=None, owner=user)
    return created.key, created.raw


@transaction.atomic
def api_key_revoke(*, key: ApiKey, actor: User | None, ip_address: str | None = None) -> ApiKey:
    """Revoke ``key`` at once (it stays listed, marked revoked), audited; revoking it again changes
    nothing. An organisation key's service user is deactivated and leaves the organisation."""
    locked = (
        ApiKey.objects.select_for_update(of=("self",)).select_related("user", "organization").get(pk=key.pk)
    )
    if locked.revoked:
        return locked
    before = _key_state(locked)
    locked.revoked = True
    locked.revoked_at = timezone.now()
    locked.revoked_by = actor if actor is not None and actor.is_authenticated else None
    locked.save(update_fields=["revoked", "revoked_at", "revoked_by"])
    transaction.on_commit(lambda: _announce_revoked(locked.pk))
    if locked.organization_id is not None:
        service_user = locked.user
        service_user.is_active = False
        service_user.save(update_fields=["is_active"])
        Membership.all_objects.filter(user=service_user).delete()
    for org in _audit_orgs(locked):
        audit_log_write(
            organization=org,
            actor=actor,
            action="api_key.revoked",
            target=locked,
            before=before,
            after=_key_state(locked),
            ip_address=ip_address,
        )
    key.revoked, key.revoked_at, key.revoked_by = locked.revoked, locked.revoked_at, locked.revoked_by
    return locked


# A key's last use is stamped at most this often from one address (the keys page shows it to the minute):
# a client opening hundreds of sockets or calls a minute with one key writes its row once, not each time.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def _stamp_is_fresh(key: ApiKey, ip_address: str | None, now: datetime) -> bool:
    return (
        key.last_used_at is not None
        and key.last_used_ip == ip_address
        and timedelta(0) <= now - key.last_used_at < LAST_USED_RESOLUTION
    )


def api_key_record_use(*, key: ApiKey, ip_address: str | None) -> None:
    """Stamp the key's last use (to the minute from one address); its first use from an address writes
    an audit row."""
    now = timezone.now()
    if _stamp_is_fresh(key, ip_address, now):
        return
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=now, last_used_ip=ip_address)
    if not ip_address or ip_address == key.last_used_ip:
        return
    with transaction.atomic():
        _, created = ApiKeyAddress.objects.get_or_create(key=key, ip_address=ip_address)
        if created:
            for org in _audit_orgs(key):
                audit_log_write(
                    organization=org,
                    actor=key.user,
                    action="api_key.used_from_new_ip",
                    target=key,
                    after={"prefix": key.key_prefix, "ip_address": ip_address},
                    ip_address=ip_address,
                )


def api_key_credential(*, raw: str, ip_address: str | None = None) -> ApiKeyCredential | None:
    """The credential of the live key ``raw`` (recording its use), or None: unknown, revoked, expired,
    or its user inactive."""
    key = ApiKey.lookup(raw)
    if key is None:
        return None
    api_key_record_use(key=key, ip_address=ip_address)
    return ApiKeyCredential.of(key)


ApiKeyState = Literal["live", "revoked", "expired"]


def api_key_state(*, key_id: int) -> ApiKeyState:
    """Whether the key is usable now, else why not: ``revoked`` (also: deleted, or its user deactivated)
    or ``expired``."""
    row = ApiKey.objects.filter(pk=key_id).values_list("revoked", "user__is_active", "expires_at").first()
    if row is None or row[0] or not row[1]:
        return "revoked"
    if row[2] is not None and row[2] <= timezone.now():
        return "expired"
    return "live"


def api_key_is_live(*, key_id: int) -> bool:
    """Whether the key is still usable now (a long-lived websocket asks before each frame)."""
    return api_key_state(key_id=key_id) == "live"


# --- reads --------------------------------------------------------------------------------------
def api_key_list_personal(*, user: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=user, organization__isnull=True).order_by("-created_at", "-id")


def api_key_list_for_org(*, organization: Organization) -> QuerySet[ApiKey]:
    return (
        ApiKey.objects.filter(organization=organization)
        .select_related("created_by", "revoked_by")
        .order_by("-created_at", "-id")
    )


def api_key_get_personal(*, user: User, key_id: Any) -> ApiKey:
    """One of ``user``'s personal keys; another's key or none at all raise the same 404."""
    key = api_key_list_personal(user=user).filter(pk=key_id).first() if str(key_id).isdigit() else None
    if key is None:
        raise Http404("Not found.")
    return key


def api_key_get_for_org(*, organization: Organization, key_id: Any) -> ApiKey:
    """One of the organisation's keys; another organisation's key or none at all raise the same 404."""
    key = (
        api_key_list_for_org(organization=organization).filter(pk=key_id).first()
        if str(key_id).isdigit()
        else None
    )
    if key is None:
        raise Http404("Not found.")
    return key
