"""The tenancy core: organisations, memberships, API keys and the append-only audit log."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Collection
from typing import Any
from zoneinfo import available_timezones

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from platform_core.model_fields import optional_foreign_key, optional_user_key

MAX_APPROVAL_COOLDOWN_HOURS = 168


def validate_time_zone(value: str) -> None:
    """An IANA time zone name (``Asia/Shanghai``, ``UTC``)."""
    if value not in available_timezones():
        raise ValidationError(_("Unknown time zone: %(zone)s"), params={"zone": value})


def site_time_zone() -> str:
    """A new organisation's time zone: the site's (``TIME_ZONE``)."""
    return str(settings.TIME_ZONE)


MAX_ATTACHMENT_RETENTION_DAYS = 36500
MAX_MEMORY_RETENTION_DAYS = 36500


def site_attachment_retention_days() -> int | None:
    """A new organisation's retention of chat attachments: the site's (``ATTACHMENT_RETENTION_DAYS``)."""
    days = getattr(settings, "ATTACHMENT_RETENTION_DAYS", None)
    return int(days) if days else None


class Organization(models.Model):
    """A tenant. Read-only mode lives here: while it is on, agents may not call write actions."""

    slug = models.SlugField(_("slug"), max_length=64, unique=True)
    name = models.CharField(_("name"), max_length=200)
    read_only = models.BooleanField(_("read-only mode"), default=False)
    read_only_reason = models.CharField(_("read-only reason"), max_length=500, blank=True)
    read_only_changed_by = optional_user_key(_("read-only mode changed by"))
    read_only_changed_at = models.DateTimeField(_("read-only mode changed at"), null=True, blank=True)
    approval_config_cooldown_hours = models.PositiveSmallIntegerField(
        _("approval configuration cooldown (hours)"),
        default=0,
        validators=[MaxValueValidator(MAX_APPROVAL_COOLDOWN_HOURS)],
        help_text=_(
            "Separation of duties: whoever changed approval policies, approver lists or Feishu channel "
            "credentials in the last this many hours cannot decide approval requests. 0 turns it off."
        ),
    )
    time_zone = models.CharField(
        _("time zone"),
        max_length=64,
        default=site_time_zone,
        validators=[validate_time_zone],
        help_text=_(
            "The IANA time zone (for example Asia/Shanghai) the organisation's pages and its usage "
            "dashboard show times and dates in."
        ),
    )
    attachment_retention_days = models.PositiveIntegerField(
        _("attachment retention (days)"),
        null=True,
        blank=True,
        default=site_attachment_retention_days,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_ATTACHMENT_RETENTION_DAYS)],
        help_text=_(
            "Files attached in the chat are deleted this many days after they were uploaded, even from "
            "conversations still kept. Empty: kept until their conversation is deleted."
        ),
    )
    memory_retention_days = models.PositiveIntegerField(
        _("memory retention (days)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_MEMORY_RETENTION_DAYS)],
        help_text=_(
            "A person's memories are deleted this many days after they were last written or changed. "
            "Empty: kept until the person deletes them."
        ),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner", _("Owner")
    ADMIN = "admin", _("Admin")
    MEMBER = "member", _("Member")
    APPROVER = "approver", _("Approver")


ADMIN_ROLES = frozenset({Role.OWNER, Role.ADMIN})


class AllMemberships(models.Manager["Membership"]):
    """Every membership row, void ones included (to remove a revoked key's service user everywhere)."""


class MembershipManager(models.Manager["Membership"]):
    """Memberships that count: an organisation key's service user counts as a member of its key's
    organisation only.

    The service user exists only to be its key's identity, and a key reaches only its own organisation.
    A row that makes it a member anywhere else (another organisation's admin added it, or an old row)
    is void: every membership check of every entry point (REST, HTTP chat, the OpenAI-compatible
    endpoint, MCP, the websocket, the chat pages) reads memberships through this manager, so the
    binding holds in one place rather than in each view. ``Membership.all_objects`` sees every row.
    """

    def get_queryset(self) -> models.QuerySet[Membership]:
        elsewhere = ApiKey.objects.filter(
            user_id=models.OuterRef("user_id"), organization__isnull=False
        ).exclude(organization_id=models.OuterRef("organization_id"))
        return super().get_queryset().exclude(models.Exists(elsewhere))


class Membership(models.Model):
    """A user's role in one organisation. A user may belong to several organisations (an organisation
    key's service user: only its key's, see :class:`MembershipManager`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="memberships"
    )
    organization = models.ForeignKey(
        Organization, verbose_name=_("organisation"), on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = MembershipManager()
    all_objects: models.Manager[Membership] = AllMemberships()

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"

    @property
    def is_admin(self) -> bool:
        return self.role in ADMIN_ROLES


class UnscopedQueryError(RuntimeError):
    """An organisation-owned model was read or written without naming an organisation."""


def _names_an_organization(lookup: str, value: object) -> bool:
    """Whether one ``filter()`` argument confines a query to one tenant: a lookup on an ``organization``
    (at any depth: ``organization``, ``connector__organization_id``), or a row already loaded from a
    tenant (a parent instance, as related managers and prefetches pass them)."""
    path = lookup.split("__")
    if "organization" in path or "organization_id" in path:
        return True
    if isinstance(value, (Organization, OrgOwnedModel)):
        return True
    if isinstance(value, OrgOwnedQuerySet):
        return value._org_scoped
    if isinstance(value, (list, tuple, set, frozenset)) and value:
        return all(isinstance(item, (Organization, OrgOwnedModel)) for item in value)
    return False


def _q_names_an_organization(q: models.Q) -> bool:
    if q.negated or q.connector != models.Q.AND:
        return False
    for child in q.children:
        if isinstance(child, models.Q):
            if _q_names_an_organization(child):
                return True
        elif isinstance(child, tuple) and _names_an_organization(*child):
            return True
    return False


class OrgOwnedQuerySet(models.QuerySet):
    """The default queryset of every tenant model, failing closed: reading, counting, updating or
    deleting rows raises :class:`UnscopedQueryError` unless a ``filter()`` named an organisation
    (:meth:`for_org`, ``organization=...``, a lookup through one) or a row loaded from a tenant (as
    related managers do). The few places that work across organisations (the platform operator's
    admin, workers that load a run by its id) say so with :meth:`unscoped`, each with a comment why.

    Django's own saves, reloads and cascades use the model's plain base manager and are not affected."""

    _org_scoped = False

    def for_org(self, org: Organization | int) -> OrgOwnedQuerySet:
        return self.filter(organization=org)

    def unscoped(self) -> OrgOwnedQuerySet:
        """This query deliberately spans organisations (say why where it is called)."""
        clone = self.all()
        clone._org_scoped = True
        return clone

    def _clone(self) -> OrgOwnedQuerySet:
        clone = super()._clone()  # type: ignore[misc]  # django-stubs declares no private QuerySet methods
        clone._org_scoped = self._org_scoped
        return clone

    def _filter_or_exclude(self, negate: bool, args: Any, kwargs: Any) -> OrgOwnedQuerySet:
        clone = super()._filter_or_exclude(negate, args, kwargs)  # type: ignore[misc]  # as _clone
        if not negate and (
            any(_names_an_organization(lookup, value) for lookup, value in kwargs.items())
            or any(isinstance(q, models.Q) and _q_names_an_organization(q) for q in args)
        ):
            clone._org_scoped = True
        return clone

    def none(self) -> OrgOwnedQuerySet:
        clone = super().none()
        clone._org_scoped = True
        return clone

    def _check_scoped(self) -> None:
        if not self._org_scoped:
            raise UnscopedQueryError(
                f"{self.model.__name__} was queried without an organisation: filter it with for_org(org) "
                "(or by a row of that organisation), or call unscoped() where it truly spans organisations."
            )

    def _fetch_all(self) -> None:
        if self._result_cache is None:
            self._check_scoped()
        super()._fetch_all()

    def iterator(self, chunk_size: int | None = None) -> Any:
        self._check_scoped()
        return super().iterator(chunk_size=chunk_size)

    def aiterator(self, chunk_size: int = 2000) -> Any:
        self._check_scoped()
        return super().aiterator(chunk_size=chunk_size)

    def count(self) -> int:
        if self._result_cache is None:
            self._check_scoped()
        return super().count()

    def exists(self) -> bool:
        if self._result_cache is None:
            self._check_scoped()
        return super().exists()

    def aggregate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check_scoped()
        return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        self._check_scoped()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._check_scoped()
        return super().delete()

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        # The rows are instances already loaded (through a scoped query), so their ids scope the update.
        return super(OrgOwnedQuerySet, self.unscoped()).bulk_update(objs, fields, batch_size=batch_size)


class OrgOwnedModel(models.Model):
    """Base of every tenant model: a non-null, indexed organisation and ``objects.for_org(org)``."""

    organization = models.ForeignKey(
        Organization,
        verbose_name=_("organisation"),
        on_delete=models.CASCADE,
        related_name="+",
        db_index=True,
    )

    # Django's generic machinery (model validation's unique checks, admin changelists and choice fields,
    # reverse relations) reads through the default manager, the first declared: a plain one, because
    # those paths are confined by the scoped bases (OrgScopedAdmin, OrgScopedViewMixin) or check a
    # constraint that spans organisations. Project code reads through ``objects``, which fails closed,
    # and never names this one (tests/platform_core/test_tenant_queries_fail_closed.py checks that).
    all_organizations = models.Manager()
    objects = OrgOwnedQuerySet.as_manager()

    class Meta:
        abstract = True


class MembershipInvitation(OrgOwnedModel):
    """An existing account invited into an organisation (issue 31): it becomes a membership only when the
    person accepts it while signed in. Deleted when accepted, declined or cancelled (the audit log keeps
    the history); it cannot be accepted after ``expires_at``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="membership_invitations",
    )
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.MEMBER)
    invited_by = optional_user_key(_("invited by"))
    created_at = models.DateTimeField(_("invited at"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"))

    class Meta:
        verbose_name = _("membership invitation")
        verbose_name_plural = _("membership invitations")
        constraints = [
            models.UniqueConstraint(fields=["user", "organization"], name="unique_membership_invitation")
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.organization} ({self.role})"

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()


class MemberGroup(OrgOwnedModel):
    """A named set of an organisation's members (issue 34): what is granted to the group (a knowledge
    base's access) is granted to each of them while they are in it and members of the organisation.

    Only members of the organisation are put in a group
    (:mod:`platform_core.identity.groups.services`), and a member who leaves the organisation leaves its
    groups (:func:`platform_core.services.membership_remove`); every access check also requires a current
    membership, so a row left behind grants nothing."""

    AUDIT_NAME = "member_group"

    name = models.CharField(_("name"), max_length=100)
    description = models.CharField(_("description"), max_length=500, blank=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("members"),
        blank=True,
        related_name="member_groups",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("member group")
        verbose_name_plural = _("member groups")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"],
                name="unique_member_group_name",
                violation_error_code="unique_member_group_name",
                violation_error_message=_("This organisation already has a group of this name."),
            )
        ]

    def __str__(self) -> str:
        return self.name


def _hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiKeyScope(models.TextChoices):
    """What an API key may do: ``read`` GET endpoints, ``chat`` start runs and messages (REST, websocket,
    MCP), ``admin`` the admin-level routes (connectors, policies, members, keys)."""

    READ = "read", pgettext_lazy("API key scope", "Read")
    CHAT = "chat", pgettext_lazy("API key scope", "Chat")
    ADMIN = "admin", pgettext_lazy("API key scope", "Admin")


def all_api_key_scopes() -> list[str]:
    return list(ApiKeyScope.values)


class ApiKey(models.Model):
    """An API key: a Bearer credential for the REST API, websocket handshakes and MCP. Only its SHA-256 is
    stored; the raw key is shown once.

    A personal key (``organization`` empty) acts as its ``user`` in every organisation of theirs. An
    organisation key acts as its own service user (``user``), a member of that organisation only, with
    the role its scopes give (admin with the ``admin`` scope, member otherwise); ``created_by`` is the
    admin who created it. Either kind is limited to its ``scopes``.
    """

    PREFIX = "apt_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_keys"
    )
    organization = optional_foreign_key(
        Organization,
        _("organisation"),
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text=_("Set for an organisation key; empty for a personal key."),
    )
    created_by = optional_user_key(_("created by"))
    name = models.CharField(_("name"), max_length=100, blank=True)
    scopes = models.JSONField(_("scopes"), default=all_api_key_scopes)
    key_prefix = models.CharField(_("key prefix"), max_length=12, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(_("last used from"), null=True, blank=True)
    revoked = models.BooleanField(_("revoked"), default=False)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    revoked_by = optional_user_key(_("revoked by"))

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name or self.key_prefix} ({self.key_prefix}…)"

    @property
    def is_org_key(self) -> bool:
        return self.organization_id is not None

    def is_expired(self, now: Any = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def is_live(self) -> bool:
        return not self.revoked and not self.is_expired()

    @classmethod
    def new_raw(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)

    @staticmethod
    def hash_raw(raw: str) -> str:
        return _hash_token(raw)

    @classmethod
    def lookup(cls, raw: str) -> ApiKey | None:
        """The live key for ``raw``: not revoked, not expired, its user active; else None."""
        if not raw.startswith(cls.PREFIX):
            return None
        live = models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now())
        return (
            cls.objects.select_related("user", "organization")
            .filter(live, key_hash=_hash_token(raw), revoked=False, user__is_active=True)
            .first()
        )


class ApiKeyAddress(models.Model):
    """An IP address an API key was used from; the first use from each is audited."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="addresses")
    ip_address = models.GenericIPAddressField(_("IP address"))
    first_seen_at = models.DateTimeField(_("first seen at"), default=timezone.now)

    class Meta:
        verbose_name = _("API key address")
        verbose_name_plural = _("API key addresses")
        constraints = [models.UniqueConstraint(fields=["key", "ip_address"], name="unique_api_key_address")]

    def __str__(self) -> str:
        return f"{self.key_id} {self.ip_address}"


class AppendOnlyError(Exception):
    """Audit log rows are never changed or removed."""


class AuditLogQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError("audit log rows cannot be updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("audit log rows cannot be deleted")

    def for_org(self, org: Organization | int) -> AuditLogQuerySet:
        return self.filter(organization=org)


class AuditLog(models.Model):
    """An append-only record of an administrative change: who did what to which object, before and after."""

    organization = models.ForeignKey(
        Organization, verbose_name=_("organisation"), on_delete=models.PROTECT, related_name="audit_logs"
    )
    actor = optional_user_key(_("actor"))
    action = models.CharField(_("action"), max_length=100, db_index=True)
    target_type = models.CharField(_("target type"), max_length=100, blank=True)
    target_id = models.CharField(_("target id"), max_length=64, blank=True)
    target_repr = models.CharField(_("target"), max_length=300, blank=True)
    before = models.JSONField(_("before"), null=True, blank=True)
    after = models.JSONField(_("after"), null=True, blank=True)
    ip_address = models.GenericIPAddressField(_("IP address"), null=True, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    objects = AuditLogQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit log entry")
        verbose_name_plural = _("audit log")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organization", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.action} {self.target_repr}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise AppendOnlyError("audit log rows cannot be updated")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("audit log rows cannot be deleted")


AUDIT_CHANGE_FIELDS: tuple[str, ...] = (
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "ip_address",
)
"""What an audit entry says was done to what, and from where: its admin page and its API show them alike."""


class ConfigVersion(models.Model):
    """How many times an organisation's agent configuration changed (agents, their connectors and actions,
    model endpoints, hook settings). Each process caches what a run loads of that configuration and
    compares this number, read with the run, to know when to load it again.

    A row of its own rather than a field of :class:`Organization`: saving an organisation (its admin
    page) writes back every field it loaded, which could turn a newer version back into an older one.
    """

    organization = models.OneToOneField(
        Organization, on_delete=models.CASCADE, primary_key=True, related_name="config_version"
    )
    version = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = _("configuration version")
        verbose_name_plural = _("configuration versions")

    def __str__(self) -> str:
        return f"{self.organization_id}@{self.version}"


class LinkedIdentity(models.Model):
    """A platform user's account at an identity provider (``feishu`` or ``oidc:<id>``).

    Feishu identities also carry the ``open_id`` a card click arrives with, so a click can be matched to
    the platform user. ``organization`` is set when an org admin linked the identity by hand (a member
    who never signs in with Feishu); such a link only counts inside that organisation. A link made by
    signing in leaves it empty: the provider proved the account is the user's.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="linked_identities",
    )
    provider = models.CharField(_("provider"), max_length=64)
    subject = models.CharField(_("subject"), max_length=255)
    open_id = models.CharField(_("Feishu open_id"), max_length=128, blank=True, db_index=True)
    union_id = models.CharField(_("Feishu union_id"), max_length=128, blank=True)
    tenant_key = models.CharField(_("Feishu tenant key"), max_length=128, blank=True)
    organization = optional_foreign_key(Organization, _("linked by hand in"), on_delete=models.CASCADE)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen at"), null=True, blank=True)

    class Meta:
        verbose_name = _("linked identity")
        verbose_name_plural = _("linked identities")
        constraints = [
            models.UniqueConstraint(fields=["provider", "subject"], name="unique_linked_identity_subject")
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.subject} → {self.user}"


class SignInSettings(OrgOwnedModel):
    """How the members of one organisation sign in (issue 20): whether a password still works.

    Without a row, password sign-in is on. With it off, a member of the organisation signs in only
    through the organisation's single sign-on providers (its :class:`SignInRule` rows name them).
    """

    AUDIT_NAME = "sign_in_settings"

    password_login = models.BooleanField(
        _("password sign-in"),
        default=True,
        help_text=_(
            "Off: members of this organisation cannot sign in with a username and password; they sign "
            "in with the single sign-on providers of the sign-in rules below."
        ),
    )

    class Meta:
        verbose_name = _("sign-in settings")
        verbose_name_plural = _("sign-in settings")
        constraints = [models.UniqueConstraint(fields=["organization"], name="unique_sign_in_settings")]

    def __str__(self) -> str:
        return str(self.organization)


SSO_ROLES = [(r.value, r.label) for r in (Role.MEMBER, Role.APPROVER, Role.ADMIN)]


class SignInRule(OrgOwnedModel):
    """Who joins an organisation through single sign-on, and with which role (issue 20).

    A Feishu rule admits the users of one Feishu tenant (``feishu_tenant_key``); an OpenID Connect rule
    admits the verified e-mail addresses of one domain. A user who signs in and matches a rule becomes
    a member with ``role`` (an existing membership keeps its role); one who matches none is refused.
    A rule is a claim on a tenant or a domain: it routes sign-ins only once an operator approved it
    (``approved_at``), and its match never changes afterwards (issue 31).
    """

    AUDIT_NAME = "sign_in_rule"

    provider = models.CharField(
        _("provider"),
        max_length=64,
        help_text=_("'feishu', or the id of an OpenID Connect provider of this deployment."),
    )
    feishu_tenant_key = models.CharField(
        _("Feishu tenant key"),
        max_length=128,
        blank=True,
        help_text=_("Feishu rules: the tenant_key of the Feishu organisation whose users may join."),
    )
    email_domain = models.CharField(
        _("e-mail domain"),
        max_length=253,
        blank=True,
        help_text=_("OpenID Connect rules: users with a verified e-mail address at this domain may join."),
    )
    role = models.CharField(_("default role"), max_length=16, choices=SSO_ROLES, default=Role.MEMBER)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    approved_at = models.DateTimeField(
        _("approved at"),
        null=True,
        blank=True,
        editable=False,
        help_text=_("When an operator approved this claim. Until then the rule routes no sign-in."),
    )
    approved_by = optional_user_key(_("approved by"), editable=False)

    class Meta:
        verbose_name = _("sign-in rule")
        verbose_name_plural = _("sign-in rules")
        ordering = ["provider", "feishu_tenant_key", "email_domain"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "provider", "feishu_tenant_key", "email_domain"],
                name="unique_sign_in_rule",
                violation_error_code="unique_sign_in_rule",
                violation_error_message=_(
                    "This organisation already has a sign-in rule for this tenant key or e-mail domain."
                ),
            ),
            models.CheckConstraint(
                condition=(models.Q(feishu_tenant_key="") & ~models.Q(email_domain=""))
                | (~models.Q(feishu_tenant_key="") & models.Q(email_domain="")),
                name="sign_in_rule_one_match",
                violation_error_code="sign_in_rule_one_match",
                violation_error_message=_(
                    "A rule admits either a Feishu tenant key (Feishu rules) or an e-mail domain (OpenID "
                    "Connect rules): fill in exactly one of them."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}: {self.feishu_tenant_key or self.email_domain} → {self.role}"

    def validate_constraints(self, exclude: Collection[str] | None = None) -> None:
        """The constraints' errors on the field the person filled in wrongly (the tenant key of a Feishu
        rule, else the e-mail domain), never as the constraint's name (issue 32)."""
        try:
            super().validate_constraints(exclude=exclude)
        except ValidationError as error:
            field = "feishu_tenant_key" if self.provider == "feishu" else "email_domain"
            moved: dict[str, list[ValidationError]] = {}
            for name, problems in error.update_error_dict({}).items():
                for problem in problems:
                    own = getattr(problem, "code", None) in {"unique_sign_in_rule", "sign_in_rule_one_match"}
                    moved.setdefault(field if name == NON_FIELD_ERRORS and own else name, []).append(problem)
            raise ValidationError(moved) from None
