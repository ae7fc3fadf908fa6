"""Guard-rail configuration and approval records: Feishu channels, approval policies and requests,
rate limits and per-agent hook settings.

Feishu secrets are :class:`~platform_core.crypto.EncryptedTextField` columns bound to their row
(:class:`~platform_core.secret_rows.SecretHoldingModel`).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from hooks.conditions import ConditionError, parse_condition
from hooks.conf import DEFAULT_APPROVAL_TIMEOUT_SECONDS, DEFAULT_MAX_OBSERVATION_CHARS, feishu_base_url
from hooks.feishu_guard import validate_feishu_base_url
from hooks.hold_reasons import hold_reason_text
from platform_core.crypto import EncryptedTextField
from platform_core.models import OrgOwnedModel, Role
from platform_core.secret_rows import SecretHoldingModel

# The roles a policy may name as approvers: the roles that may decide at all.
APPROVER_ROLE_CHOICES = (Role.APPROVER.value, Role.ADMIN.value, Role.OWNER.value)


class CardLanguage(models.TextChoices):
    ZH_HANS = "zh-hans", _("Simplified Chinese")
    EN = "en", _("English")


class ReceiveIdType(models.TextChoices):
    CHAT_ID = "chat_id", _("Group chat ID")
    OPEN_ID = "open_id", _("User open_id")
    UNION_ID = "union_id", _("User union_id")
    USER_ID = "user_id", _("User ID")
    EMAIL = "email", _("E-mail address")


class FeishuChannel(SecretHoldingModel):
    """A Feishu (Lark) app of an organisation through which approval cards are sent and answered."""

    name = models.CharField(_("name"), max_length=100)
    app_id = models.CharField(_("app ID"), max_length=64, help_text=_("For example cli_a1b2c3d4e5f6"))
    app_secret = EncryptedTextField(_("app secret"))
    verification_token = EncryptedTextField(_("verification token"))
    encrypt_key = EncryptedTextField(_("encrypt key"))
    base_url = models.URLField(
        _("base URL"),
        max_length=200,
        blank=True,
        help_text=_("Leave empty for the platform default (Feishu China or Lark, as configured)."),
    )
    default_chat_id = models.CharField(
        _("default chat"),
        max_length=100,
        blank=True,
        help_text=_("Where cards go when a policy names no chat, e.g. oc_… (the app's bot must be in it)."),
    )
    receive_id_type = models.CharField(
        _("chat ID type"), max_length=16, choices=ReceiveIdType.choices, default=ReceiveIdType.CHAT_ID
    )
    language = models.CharField(
        _("card language"), max_length=8, choices=CardLanguage.choices, default=CardLanguage.ZH_HANS
    )
    is_active = models.BooleanField(_("active"), default=True)
    credentials_version = models.PositiveIntegerField(
        _("credentials version"),
        default=1,
        editable=False,
        help_text=_("Goes up whenever the app ID, secret, tokens, keys or base URL change."),
    )
    credentials_changed_at = models.DateTimeField(_("credentials changed at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    SECRET_FIELDS = ("app_secret", "verification_token", "encrypt_key")
    # A request is bound to the version of these; changing any of them leaves pending requests undecidable
    # by card until they are re-sent.
    CREDENTIAL_FIELDS = ("app_id", "base_url", *SECRET_FIELDS)

    class Meta:
        verbose_name = _("Feishu channel")
        verbose_name_plural = _("Feishu channels")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_feishu_channel_name")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The base URL must pass the SSRF guard (the same check runs again on every call)."""
        try:
            validate_feishu_base_url(self.base_url)
        except ValidationError as exc:
            raise ValidationError({"base_url": exc.error_list}) from exc

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, bumping ``credentials_version`` when a credential differs from the stored row (whoever
        saves: the admin, the API or code; a stale copy writing old values back counts as a change).
        ``changed_credentials`` then names the fields that changed, for the audit log."""
        with transaction.atomic(using=kwargs.get("using")):
            self.changed_credentials = self._credentials_to_bump()
            update_fields = kwargs.get("update_fields")
            if self.changed_credentials and update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "credentials_version", "credentials_changed_at"}
            super().save(*args, **kwargs)

    def _credentials_to_bump(self) -> tuple[str, ...]:
        if self._state.adding:
            return ()
        stored = (
            type(self)
            .objects.for_org(self.organization_id)
            .select_for_update()
            .only("credentials_version", "credentials_changed_at", "organization", *self.CREDENTIAL_FIELDS)
            .filter(pk=self.pk)
            .first()
        )
        if stored is None:
            return ()
        changed = tuple(f for f in self.CREDENTIAL_FIELDS if not _same_value(self, stored, f))
        if changed:
            self.credentials_version = stored.credentials_version + 1
            self.credentials_changed_at = timezone.now()
        else:
            self.credentials_version = stored.credentials_version
            self.credentials_changed_at = stored.credentials_changed_at
        return changed

    @property
    def effective_base_url(self) -> str:
        return (self.base_url or feishu_base_url()).rstrip("/")

    @property
    def callback_path(self) -> str:
        """The path to enter in the Feishu app's callback configuration."""
        return f"/integrations/feishu/{self.pk}/callback/"


def _same_value(current: models.Model, stored: models.Model, field: str) -> bool:
    mine, theirs = current.__dict__.get(field), stored.__dict__.get(field)
    if mine is theirs or (getattr(mine, "token", None) or 0) == (getattr(theirs, "token", None) or 1):
        return True  # the same stored token: no need to decrypt
    try:
        return (getattr(current, field) or "") == (getattr(stored, field) or "")
    except Exception:  # a token that no longer decrypts: treat as changed
        return False


class ApprovalPolicy(OrgOwnedModel):
    """Which tool calls wait for a human: the actions or connectors covered, an optional condition on the
    arguments, who may decide, where the card goes and how long to wait."""

    name = models.CharField(_("name"), max_length=100)
    description = models.TextField(_("description"), blank=True)
    actions = models.ManyToManyField(
        "connectors.ConnectorAction",
        verbose_name=_("actions"),
        blank=True,
        related_name="approval_policies",
        help_text=_("Calls of these actions need approval."),
    )
    connectors = models.ManyToManyField(
        "connectors.Connector",
        verbose_name=_("connectors"),
        blank=True,
        related_name="approval_policies",
        help_text=_("Calls of any action of these connectors need approval."),
    )
    writes_only = models.BooleanField(
        _("write actions only"),
        default=True,
        help_text=_("For the connectors above, cover only their write actions."),
    )
    condition = models.TextField(
        _("condition"),
        blank=True,
        help_text=_(
            'Optional, e.g. amount > 50000 and currency == "CNY". Empty: every covered call needs '
            "approval. A missing argument or a condition that cannot be evaluated also requires approval."
        ),
    )
    approver_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("approvers"),
        blank=True,
        related_name="+",
        help_text=_(
            "Members with the approver, admin or owner role who may decide, in the web app and on the "
            "Feishu card (through their linked Feishu account)."
        ),
    )
    approver_roles = models.JSONField(
        _("approver roles"),
        default=list,
        blank=True,
        help_text=_(
            "Every member holding one of these roles may decide too. No approvers and no roles: every "
            "approver, admin and owner of the organisation."
        ),
    )
    approver_open_ids = models.JSONField(
        _("people without a platform account (Feishu open_id)"),
        default=list,
        blank=True,
        help_text=_(
            "Feishu open_ids (ou_…) of people who have no platform account and may decide on the card "
            "only. Without any Feishu approver the card still goes to the chat, without buttons, and says "
            "to decide in the approvals inbox."
        ),
    )
    channel = models.ForeignKey(
        FeishuChannel,
        verbose_name=_("Feishu channel"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="policies",
    )
    chat_id = models.CharField(
        _("chat"), max_length=100, blank=True, help_text=_("Empty: the channel's default chat.")
    )
    timeout_seconds = models.PositiveIntegerField(
        _("timeout (seconds)"),
        default=DEFAULT_APPROVAL_TIMEOUT_SECONDS,
        validators=[MinValueValidator(10), MaxValueValidator(7 * 24 * 3600)],
        help_text=_("How long a call waits for a decision before it expires (default 10 minutes)."),
    )
    is_active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("approval policy")
        verbose_name_plural = _("approval policies")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_approval_policy_name")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if self.condition.strip():
            try:
                parse_condition(self.condition)
            except ConditionError as exc:
                errors["condition"] = _("Not a valid condition: %(error)s") % {"error": exc}
        ids = self.approver_open_ids
        if not isinstance(ids, list) or not all(isinstance(i, str) and i.strip() for i in ids):
            errors["approver_open_ids"] = _('Give a list of Feishu open_ids, e.g. ["ou_123"].')
        roles = self.approver_roles
        if not isinstance(roles, list) or not all(r in APPROVER_ROLE_CHOICES for r in roles):
            errors["approver_roles"] = _("Choose roles among approver, admin and owner.")
        # None, without a query, when no channel is set
        channel = self.channel if self.organization_id is not None else None
        if channel is not None and channel.organization_id != self.organization_id:
            errors["channel"] = _("Choose a channel of this organisation.")
        if errors:
            raise ValidationError(errors)


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    EXPIRED = "expired", _("Expired")
    CANCELLED = "cancelled", _("Cancelled")


class DecidedVia(models.TextChoices):
    FEISHU = "feishu", _("Feishu card")
    WEB = "web", _("Web app or API")


class RequesterExclusion(models.TextChoices):
    """Whether the person who asked would have been among a request's deciders (they never decide it)."""

    NONE = "", _("The requester was not among the approvers")
    EXCLUDED = "excluded", _("The requester is an approver; someone else must decide")
    ONLY_APPROVER = (
        "only_approver",
        _("The requester was the only approver; owners and admins other than them decide"),
    )


class CardStatus(models.TextChoices):
    """Where a request's Feishu card is; ``card_error`` says why when it failed."""

    NONE = "none", _("Not sent: the policy names no active Feishu channel")
    NO_CHAT = "no_chat", _("Not sent: no chat to send it to (neither the policy nor its channel names one)")
    SKIPPED = "skipped", _("Not sent: decided before the card went out")
    QUEUED = "queued", _("Queued")
    SENT = "sent", _("Sent")
    FAILED = "failed", _("Failed")
    UPDATED = "updated", _("Updated with the outcome")
    UPDATE_FAILED = "update_failed", _("Sent, but updating it with the outcome failed")


class ApprovalRequest(OrgOwnedModel):
    """One tool call held for a human decision. Its status changes only by conditional updates
    (``WHERE status = 'pending'``), so exactly one decision lands."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    policy = models.ForeignKey(
        ApprovalPolicy,
        verbose_name=_("policy"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="requests",
    )
    policy_name = models.CharField(_("policy name"), max_length=100, blank=True)
    run = models.ForeignKey(
        "agents.Run",
        verbose_name=_("run"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    conversation_id = models.CharField(_("conversation"), max_length=64, blank=True)
    agent_id = models.CharField(_("agent ID"), max_length=64, blank=True)
    agent_name = models.CharField(_("agent"), max_length=100, blank=True)
    tool_call_id = models.CharField(_("tool call ID"), max_length=128, blank=True)
    tool_name = models.CharField(_("tool"), max_length=64)
    action = models.ForeignKey(
        "connectors.ConnectorAction",
        verbose_name=_("action"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    arguments = models.JSONField(_("arguments (redacted)"), default=dict, blank=True)
    hold_reason = models.JSONField(
        _("why it was held"),
        default=dict,
        blank=True,
        help_text=_("The policy's condition that matched, or why it could not be evaluated."),
    )
    status = models.CharField(
        _("status"), max_length=12, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("requested by"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    approver_open_ids = models.JSONField(_("Feishu approvers"), default=list, blank=True)
    approver_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, verbose_name=_("platform approvers"), blank=True, related_name="+"
    )
    requester_exclusion = models.CharField(
        _("requester left out"),
        max_length=16,
        choices=RequesterExclusion.choices,
        default=RequesterExclusion.NONE,
        blank=True,
        help_text=_("The requester never decides their own request; set when they would have been asked."),
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("decided by"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_by_open_id = models.CharField(_("decided by (Feishu open_id)"), max_length=100, blank=True)
    decided_via = models.CharField(_("decided via"), max_length=8, choices=DecidedVia.choices, blank=True)
    comment = models.TextField(_("comment"), blank=True)
    channel = models.ForeignKey(
        FeishuChannel,
        verbose_name=_("Feishu channel"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    channel_credentials_version = models.PositiveIntegerField(
        _("channel credentials version"),
        null=True,
        blank=True,
        help_text=_(
            "The channel's credentials when the card was sent; a click decides only while they match."
        ),
    )
    call_digest = models.CharField(_("call digest"), max_length=64, blank=True)
    resend_count = models.PositiveSmallIntegerField(_("times re-sent"), default=0)
    chat_id = models.CharField(_("chat"), max_length=100, blank=True)
    feishu_message_id = models.CharField(_("Feishu message ID"), max_length=100, blank=True)
    card_status = models.CharField(
        _("card"), max_length=16, choices=CardStatus.choices, default=CardStatus.NONE
    )
    card_error = models.CharField(_("card error"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("requested at"), default=timezone.now, db_index=True)
    expires_at = models.DateTimeField(_("expires at"))
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)

    class Meta:
        verbose_name = _("approval request")
        verbose_name_plural = _("approval requests")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "status", "-created_at"]),
            models.Index(fields=["status", "expires_at"]),
            models.Index(fields=["run", "call_digest"]),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.get_status_display()})"

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING

    @property
    def card_uuid(self) -> str:
        """Feishu's idempotency key of this request's current card: a re-send is a new message."""
        return str(self.pk) if not self.resend_count else f"{self.pk}-r{self.resend_count}"

    def held_because(self) -> str:
        """Why the call was held, in the active language ("" for requests stored before reasons were)."""
        return hold_reason_text(self.hold_reason)

    def decider_label(self) -> str:
        """Who decided, for people: the platform user's name (a Feishu click matched to its user too),
        else the Feishu open_id of a person without a platform account."""
        decided_by = self.decided_by  # None without a query when no user decided
        if decided_by is not None:
            full = decided_by.get_full_name().strip() if hasattr(decided_by, "get_full_name") else ""
            return full or decided_by.get_username()
        return self.decided_by_open_id


class RateLimit(OrgOwnedModel):
    """At most ``max_calls`` connector calls per ``period_seconds``, for one connector or all of them,
    counted for everyone together or for each user separately."""

    name = models.CharField(_("name"), max_length=100)
    connector = models.ForeignKey(
        "connectors.Connector",
        verbose_name=_("connector"),
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="rate_limits",
        help_text=_("Empty: calls of every connector count."),
    )
    per_user = models.BooleanField(
        _("per user"), default=False, help_text=_("Count each user's calls separately.")
    )
    max_calls = models.PositiveIntegerField(_("maximum calls"), validators=[MinValueValidator(1)])
    period_seconds = models.PositiveIntegerField(
        _("period (seconds)"), default=60, validators=[MinValueValidator(1), MaxValueValidator(86400)]
    )
    is_active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("rate limit")
        verbose_name_plural = _("rate limits")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # None, without a query, when no connector is set
        connector = self.connector if self.organization_id is not None else None
        if connector is not None and connector.organization_id != self.organization_id:
            raise ValidationError({"connector": _("Choose a connector of this organisation.")})


class AgentHookSettings(OrgOwnedModel):
    """Per-agent switches of the built-in hooks that may be turned off. The read-only guard, the approval
    gate and the audit log always run."""

    agent = models.OneToOneField(
        "agents.Agent", verbose_name=_("agent"), on_delete=models.CASCADE, related_name="hook_settings"
    )
    rate_limits_enabled = models.BooleanField(_("apply rate limits"), default=True)
    truncate_enabled = models.BooleanField(_("shorten long tool results"), default=True)
    max_observation_chars = models.PositiveIntegerField(
        _("longest tool result (characters)"),
        default=DEFAULT_MAX_OBSERVATION_CHARS,
        validators=[MinValueValidator(200), MaxValueValidator(500_000)],
    )
    session_context_enabled = models.BooleanField(
        _("tell the agent the organisation, user, date and its actions"), default=True
    )

    class Meta:
        verbose_name = _("agent hook settings")
        verbose_name_plural = _("agent hook settings")

    def __str__(self) -> str:
        return str(self.agent)

    def clean(self) -> None:
        if self.agent_id is not None and self.organization_id is not None:
            if self.agent.organization_id != self.organization_id:
                raise ValidationError({"agent": _("Choose an agent of this organisation.")})

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Always the agent's organisation, whoever writes the row.
        if self.agent_id is not None:
            self.organization_id = self.agent.organization_id
        super().save(*args, **kwargs)


class FeishuEventReceipt(models.Model):
    """A Feishu callback ``event_id`` already handled; the unique key makes a replay fail to insert."""

    event_id = models.CharField(max_length=128, unique=True)
    channel = models.ForeignKey(FeishuChannel, on_delete=models.CASCADE, related_name="+")
    received_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("Feishu event receipt")
        verbose_name_plural = _("Feishu event receipts")

    def __str__(self) -> str:
        return self.event_id
