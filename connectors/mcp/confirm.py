"""An admin confirms an MCP tool as a read, or withdraws that confirmation (each audited).

The server's annotations are only its claim (:mod:`connectors.mcp.trust`): a tool becomes a read for
read-only mode and approval policies only through :func:`mcp_action_confirm_read`. A tool whose
annotations contradict each other cannot be confirmed. "Sync tools" withdraws a confirmation itself when
the tool's annotations, input schema or description change (:mod:`connectors.mcp.sync`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from connectors.mcp.trust import server_claim
from connectors.models import ConnectorAction, ConnectorKind
from platform_core.services import audit_log_write

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True, slots=True)
class ReadConfirmed:
    """The tool is now (or already was) a confirmed read."""

    action: ConnectorAction
    changed: bool = True
    type: str = "confirmed"


@dataclass(frozen=True, slots=True)
class ReadWithdrawn:
    """The tool is now (or already was) an unconfirmed write."""

    action: ConnectorAction
    changed: bool = True
    type: str = "withdrawn"


RefusalCode = Literal["not_mcp", "contradictory"]
_REFUSALS = {
    "not_mcp": _("only the tools of MCP connectors are confirmed as reads"),
    "contradictory": _(
        "the server marks it both read-only and destructive; annotations that contradict each other keep "
        "it a write"
    ),
}


@dataclass(frozen=True, slots=True)
class ConfirmRefused:
    """Why the tool cannot be confirmed as a read."""

    code: RefusalCode
    type: str = "refused"

    @property
    def reason(self) -> str:
        """The reason in the active language."""
        return str(_REFUSALS[self.code])


def _audit_state(action: ConnectorAction) -> dict[str, Any]:
    return {
        "mcp_tool": action.mcp_tool,
        "is_write": action.is_write,
        "server_claim": server_claim(action.mcp_annotations).kind,
        "mcp_annotations": action.mcp_annotations,
        "confirmed": action.mcp_read_confirmed_at is not None,
    }


def _audit_change(
    current: ConnectorAction,
    action: str,
    *,
    before: dict[str, Any],
    actor: User | None,
    ip_address: str | None,
    reason: str = "",
) -> None:
    """The audit row of a confirmation or its withdrawal: the action's state before and after it."""
    after = _audit_state(current)
    if reason:
        after["reason"] = reason
    audit_log_write(
        organization=current.connector.organization,
        actor=actor,
        action=action,
        target=current,
        before=before,
        after=after,
        ip_address=ip_address,
    )


def _locked(action: ConnectorAction) -> ConnectorAction:
    return (
        ConnectorAction.objects.select_for_update()
        .select_related("connector")
        .get(pk=action.pk, organization_id=action.organization_id)
    )


@transaction.atomic
def mcp_action_confirm_read(
    *, action: ConnectorAction, actor: User | None, ip_address: str | None = None
) -> ReadConfirmed | ConfirmRefused:
    """Confirm an MCP tool as a read (one audit row); refused for other actions and contradictory tools."""
    current = _locked(action)
    if not current.mcp_tool or current.connector.kind != ConnectorKind.MCP:
        return ConfirmRefused("not_mcp")
    if server_claim(current.mcp_annotations).kind == "contradictory":
        return ConfirmRefused("contradictory")
    if current.mcp_read_confirmed_at is not None and not current.is_write_override:
        return ReadConfirmed(current, changed=False)
    before = _audit_state(current)
    current.mcp_read_confirmed_at = timezone.now()
    current.mcp_read_confirmed_by = actor if actor is not None and actor.is_authenticated else None
    current.is_write_override = False  # the confirmation, not an override, decides
    current.save(
        update_fields=[
            "mcp_read_confirmed_at",
            "mcp_read_confirmed_by",
            "is_write_override",
            "updated_at",
        ]
    )
    _audit_change(
        current, "connector_action.mcp_read_confirmed", before=before, actor=actor, ip_address=ip_address
    )
    return ReadConfirmed(current)


@transaction.atomic
def mcp_action_withdraw_read(
    *,
    action: ConnectorAction,
    actor: User | None,
    ip_address: str | None = None,
    reason: str = "",
) -> ReadWithdrawn | ConfirmRefused:
    """Make a confirmed MCP tool an unconfirmed write again (one audit row, with ``reason`` if given)."""
    current = _locked(action)
    if not current.mcp_tool:
        return ConfirmRefused("not_mcp")
    if current.mcp_read_confirmed_at is None:
        return ReadWithdrawn(current, changed=False)
    before = _audit_state(current)
    current.mcp_read_confirmed_at = None
    current.mcp_read_confirmed_by = None
    current.save(update_fields=["mcp_read_confirmed_at", "mcp_read_confirmed_by", "updated_at"])
    _audit_change(
        current,
        "connector_action.mcp_read_withdrawn",
        before=before,
        actor=actor,
        ip_address=ip_address,
        reason=reason,
    )
    return ReadWithdrawn(current)
