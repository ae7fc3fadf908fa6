"""ApprovalGate: holds tool calls that match an approval policy until a human decides.

For a matching call the gate creates an :class:`~hooks.models.ApprovalRequest` (whose Feishu card is
queued on commit), reports ``approval`` ``pending`` to the chat, then waits. It wakes on a message to the
channel-layer group ``approval.<id hex>`` and, in any case, re-reads the request from the database every
few seconds, so a decision recorded by any process (another server, a plain HTTP request, a Celery
worker, a shell) reaches it even when no message does. At the policy's deadline it expires the request
itself (a conditional update: a decision that lands first wins).

Approved: the call runs with exactly the arguments that were shown to the approvers. Rejected or
expired: the call is blocked and the model is told who rejected it and why, or that it expired, as a
decision to report rather than an error to retry.

Durable runs: the gate waits in process at most the run context's ``approval_hold_seconds`` (set by
the run manager: ``APPROVAL_INPROCESS_HOLD_SECONDS``, 0 in Celery workers). When the request is still
pending then, its verdict is :class:`~agents.engine.verdicts.Park`: the run is parked with the call
pending and resumes when the decision arrives. A resumed run replays the call (``ctx.replayed``): the
gate then reuses the request it opened for the same tool call id (and the same arguments) instead of
asking again, and goes on with its decision (or waits again while it is pending).

An identical call of the same run (same tool, same arguments as the approvers saw them) that was already
rejected, or is still pending, is not asked again: the model is told so (a plan step's retries and a
ReAct loop's alike, since both share the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents.engine.hooks import ALLOW, Block, HookContext, Park, PreToolUseHook, PreVerdict, Rewrite
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from connectors.configs import connector_secrets_for_redaction
from connectors.redaction import redact
from hooks import addressed
from hooks.approvers import approver_names, requester_note
from hooks.audit import AuditHook
from hooks.call_config import call_guard_config
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.conditions import Matched, Unjudged, evaluate_condition
from hooks.conf import approval_recheck_seconds
from hooks.hold_reasons import hold_reason_data
from hooks.models import ApprovalPolicy, ApprovalRequest, ApprovalStatus
from hooks.services import (
    approval_cancel,
    approval_expire,
    approval_group,
    approval_request_create,
    call_digest,
)
from hooks.state import GateOutcome, RunGuardState

logger = logging.getLogger(__name__)

PRIORITY = 20
# emit(channel, data) -> the event's seq (``None``: not stored); the gate does not use the seq.
Emit = Callable[[str, dict[str, Any]], int | None]


@dataclass(frozen=True, slots=True)
class PolicyHold:
    """A policy holds the call for approval: its condition matched, or could not be evaluated."""

    policy: ApprovalPolicy
    outcome: Matched | Unjudged

    @property
    def reason(self) -> dict[str, Any]:
        """Why, as the request stores it (:mod:`hooks.hold_reasons`)."""
        return hold_reason_data(self.outcome)


def policy_for_call(
    *, organization_id: int, info: ActionInfo, arguments: Mapping[str, Any]
) -> ApprovalPolicy | None:
    """The first active policy (by name) that covers the action and whose condition holds (sync; the
    organisation's current configuration, as the approval gate sees it)."""
    config = call_guard_config(organization_id)
    return policy_requiring_approval(config.policies_for(info) if config is not None else (), arguments)


def policy_requiring_approval(
    policies: Iterable[ApprovalPolicy], arguments: Mapping[str, Any]
) -> ApprovalPolicy | None:
    """The first of ``policies`` whose condition holds for the call's arguments."""
    hold = policy_hold(policies, arguments)
    return hold.policy if hold is not None else None


def policy_hold(policies: Iterable[ApprovalPolicy], arguments: Mapping[str, Any]) -> PolicyHold | None:
    """The first of ``policies`` that holds the call for approval, and why (fail closed: a condition that
    cannot be evaluated holds it too)."""
    for policy in policies:
        outcome = evaluate_condition(policy.condition, arguments)
        if isinstance(outcome, Matched | Unjudged):
            return PolicyHold(policy, outcome)
    return None


def _approver_labels(approval: ApprovalRequest) -> list[str]:
    return approver_names(approval)


def _earlier_request(
    facts: RunContext, info: ActionInfo, arguments: dict[str, Any], tool_call_id: str
) -> ApprovalRequest | None:
    """The request this run opened for the same call before it stopped (same id, tool and arguments)."""
    org_id = facts.org_id
    if org_id is None or not facts.run_id or not tool_call_id:
        return None  # a run without an organisation has no requests
    earlier = (
        ApprovalRequest.objects.filter(
            organization_id=org_id,
            run_id=facts.run_id,
            tool_call_id=tool_call_id[:128],
            tool_name=info.tool_name[:64],
        )
        .exclude(status=ApprovalStatus.CANCELLED)
        .order_by("-created_at")
        .first()
    )
    if earlier is None:
        return None
    shown = redact(dict(arguments), connector_secrets_for_redaction(org_id, info.connector_id))
    return earlier if shown == earlier.arguments else None


@dataclass(frozen=True, slots=True)
class Opened:
    """The call's request and its approvers; ``earlier`` when this attempt replays a call that opened it."""

    approval: ApprovalRequest
    approvers: list[str]
    earlier: bool


@dataclass(frozen=True, slots=True)
class AskedBefore:
    """An identical call of this run (same tool, same arguments as shown) was already rejected or is
    still pending: the approvers are not asked again."""

    approval: ApprovalRequest


def _asked_before(
    facts: RunContext, info: ActionInfo, arguments: dict[str, Any], secrets: tuple[str, ...]
) -> ApprovalRequest | None:
    if not facts.run_id:
        return None
    tool_name = info.tool_name[:64]
    return (
        ApprovalRequest.objects.select_related("decided_by")
        .filter(
            organization_id=facts.org_id,
            run_id=facts.run_id,
            call_digest=call_digest(tool_name, redact(dict(arguments), secrets)),
            tool_name=tool_name,
            status__in=(ApprovalStatus.PENDING, ApprovalStatus.REJECTED),
        )
        .order_by("-created_at")
        .first()
    )


def _open_request(
    facts: RunContext,
    info: ActionInfo,
    arguments: dict[str, Any],
    tool_call_id: str,
    replayed: bool,
    hold: PolicyHold | None,
) -> Opened | AskedBefore | None:
    """The call's request under the policy that ``hold``s it (a replay's earlier one, or a new one), or
    the identical call of this run asked before; ``None`` when no policy requires approval of the call."""
    if replayed:
        earlier = _earlier_request(facts, info, arguments, tool_call_id)
        if earlier is not None:
            return Opened(earlier, _approver_labels(earlier), True)
    org_id = facts.org_id
    if hold is None or org_id is None:  # a run without an organisation has no policies
        return None
    secrets = connector_secrets_for_redaction(org_id, info.connector_id)
    before = _asked_before(facts, info, arguments, secrets)
    if before is not None:
        return AskedBefore(before)
    approval = approval_request_create(
        organization_id=org_id,
        policy=hold.policy,
        tool_name=info.tool_name,
        arguments=arguments,
        tool_call_id=tool_call_id,
        run_id=facts.run_id or None,
        conversation_id=facts.conversation_id,
        agent_id=facts.agent_id,
        agent_name=facts.agent_name,
        requested_by_id=facts.user_id,
        action_id=info.action_id,
        secrets=secrets,
        hold_reason=hold.reason,
    )
    return Opened(approval, _approver_labels(approval), False)


def _load(approval_id: Any) -> ApprovalRequest:
    return addressed.approvals().select_related("decided_by").get(pk=approval_id)


def _status(approval_id: Any) -> str | None:
    return addressed.approvals().filter(pk=approval_id).values_list("status", flat=True).first()


def _expire(approval_id: Any) -> None:
    approval_expire(approval=_load(approval_id))


def _cancel(approval_id: Any) -> None:
    approval_cancel(approval=_load(approval_id))


async def await_decision(
    approval_id: Any,
    *,
    expires_at: datetime,
    recheck: float | None = None,
    give_up_at: datetime | None = None,
) -> str:
    """Wait until the request is decided or its time is up (then expire it); return the final status.

    With ``give_up_at`` (a run's in-process hold), returns ``pending`` when that comes first.
    """
    recheck = approval_recheck_seconds() if recheck is None else recheck
    layer = get_channel_layer()
    channel: str | None = None
    group = approval_group(approval_id)
    if layer is not None:
        try:
            channel = await layer.new_channel("approval.")
            await layer.group_add(group, channel)
        except Exception:
            logger.warning("approval %s: no channel layer, waiting on the database alone", approval_id)
            channel = None
    try:
        while True:
            status = await database_sync_to_async(_status)(approval_id)
            if status is None:
                return ApprovalStatus.CANCELLED  # the request was deleted
            if status != ApprovalStatus.PENDING:
                return status
            now = timezone.now()
            remaining = (expires_at - now).total_seconds()
            if remaining <= 0:
                await database_sync_to_async(_expire)(approval_id)
                continue  # re-read: a decision may have landed first
            if give_up_at is not None:
                held = (give_up_at - now).total_seconds()
                if held <= 0:
                    return ApprovalStatus.PENDING
                remaining = min(remaining, held)
            pause = max(0.01, min(recheck, remaining))
            if channel is None:
                await asyncio.sleep(pause)
                continue
            try:
                async with asyncio.timeout(pause):
                    await layer.receive(channel)
            except TimeoutError:
                pass
            except Exception:
                logger.warning("approval %s: the channel layer failed; re-checking the database", approval_id)
                await asyncio.sleep(pause)
    finally:
        if channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(group, channel)


def _decision_values(approval: ApprovalRequest) -> dict[str, Any]:
    """The tool, who decided and why, as the messages about a decision name them (in the active language)."""
    return {
        "tool": approval.tool_name,
        "who": approval.decider_label() or _("an approver"),
        "reason": approval.comment or _("no reason given"),
    }


def decision_message(approval: ApprovalRequest, language: str | None) -> str:
    """What the model sees when the call did not run because of the approval's outcome."""
    with translation.override(language):
        values = {
            **_decision_values(approval),
            "minutes": max(1, round((approval.expires_at - approval.created_at).total_seconds() / 60)),
        }
        if approval.status == ApprovalStatus.REJECTED:
            return (
                _(
                    "the call to %(tool)s was rejected by %(who)s (reason: %(reason)s). This is a human "
                    "decision: do not retry it; tell the user."
                )
                % values
            )
        if approval.status == ApprovalStatus.EXPIRED:
            return (
                _(
                    "nobody decided on the approval request for %(tool)s within %(minutes)s minutes, so it "
                    "expired and the call was not made. This is a decision to report to the user, not an "
                    "error to retry."
                )
                % values
            )
        return _("the approval request for %(tool)s was cancelled; the call was not made.") % values


def asked_before_message(approval: ApprovalRequest, language: str | None) -> str:
    """What the model sees for a call identical to one of this run already rejected or still pending."""
    with translation.override(language):
        values = _decision_values(approval)
        if approval.status == ApprovalStatus.REJECTED:
            return (
                _(
                    "an identical call to %(tool)s was already rejected by %(who)s (reason: %(reason)s), so "
                    "the approvers were not asked again and the call was not made. This is a human "
                    "decision: do not retry it; tell the user."
                )
                % values
            )
        return (
            _(
                "an identical call to %(tool)s is still waiting for approval, so the approvers were not "
                "asked again and this call was not made. Do not repeat it; its outcome is reported on "
                "the call that is waiting."
            )
            % values
        )


def approval_event_data(
    approval: ApprovalRequest, tool_call_id: str, approvers: list[str], language: str | None
) -> dict[str, Any]:
    """The payload of the chat's ``approval`` event for ``approval`` in its current status."""
    decided = approval.status != ApprovalStatus.PENDING
    reason = approval.comment if decided else ""
    if approval.status == ApprovalStatus.EXPIRED:
        with translation.override(language):
            reason = _("no decision before the deadline")
    note = ""
    if not decided:
        with translation.override(language) if language else contextlib.nullcontext():
            note = requester_note(approval, approvers=approvers)
    return {
        "status": approval.status,
        "approval_id": str(approval.pk),
        "tool_name": approval.tool_name,
        "tool_args": approval.arguments,
        "approvers": approvers,
        "decided_by": approval.decider_label() or None if decided else None,
        "reason": reason or None,
        "tool_call_id": tool_call_id,
        "expires_at": approval.expires_at.isoformat(),
        "note": note,
    }


def approval_approvers(approval: ApprovalRequest) -> list[str]:
    """How the chat names the approvers of a request (sync)."""
    return _approver_labels(approval)


class ApprovalGate(PreToolUseHook):
    """Waits for a human decision on calls that an active approval policy covers."""

    name = "approval_gate"
    priority = PRIORITY

    def __init__(
        self,
        *,
        facts: RunContext,
        catalog: ActionCatalog,
        state: RunGuardState,
        audit: AuditHook | None = None,
        emit: Emit | None = None,
        language: str | None = None,
    ) -> None:
        self.facts = facts
        self.catalog = catalog
        self.state = state
        self.audit = audit
        self.emit = emit
        self.language = language

    def _report(self, approval: ApprovalRequest, call: ToolCallContext, approvers: list[str]) -> None:
        """Tell the chat about the request of ``call``; inside a plan step, the event names the step (and
        round): tool call ids may repeat across steps."""
        if self.emit is None:
            return
        data = approval_event_data(approval, call.tool_call_id, approvers, self.language)
        if call.plan_step_id is not None:
            data["plan_step_id"] = call.plan_step_id
            if call.run.plan_round is not None:
                data["plan_round"] = call.run.plan_round
        self.emit("approval", data)

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        info = self.catalog.get(ctx.tool_name)
        if info is None:
            return ALLOW
        arguments = copy.deepcopy(dict(ctx.tool_args))
        config = await self.state.call_config(self.facts.org_id, ctx.tool_call_id, info.connector_id)
        hold = policy_hold(config.policies_for(info) if config is not None else (), arguments)
        if hold is None and not ctx.replayed:
            return ALLOW  # no request to open or to find: no database hop
        opened = await database_sync_to_async(_open_request)(
            self.facts, info, arguments, ctx.tool_call_id, ctx.replayed, hold
        )
        if opened is None:
            return ALLOW
        if isinstance(opened, AskedBefore):
            before = opened.approval
            self.state.approvals[ctx.tool_call_id] = GateOutcome(
                approval_id=str(before.pk), status=before.status, decided_by=before.decider_label()
            )
            return Block(asked_before_message(before, self.language))
        approval, approvers, earlier = opened.approval, opened.approvers, opened.earlier
        if not earlier:
            self._report(approval, ctx.call, approvers)  # a replay's chat already shows it
        status = approval.status
        if status == ApprovalStatus.PENDING:
            hold_seconds = ctx.run.approval_hold_seconds
            give_up_at = (
                timezone.now() + timedelta(seconds=float(hold_seconds)) if hold_seconds is not None else None
            )
            try:
                status = await await_decision(
                    approval.pk, expires_at=approval.expires_at, give_up_at=give_up_at
                )
                # Configuration read before a human decided may be stale: the hooks after this one re-read it.
                self.state.forget_call(ctx.tool_call_id)
            except asyncio.CancelledError:
                await asyncio.shield(self._abandon(approval, info, ctx, approvers))
                raise
            if status == ApprovalStatus.PENDING:
                logger.info(
                    "approval %s still pending after the in-process hold: parking the run", approval.pk
                )
                return Park("approval", {"approval_id": str(approval.pk), "tool_call_id": ctx.tool_call_id})
        approval = await database_sync_to_async(_load)(approval.pk)
        self.state.approvals[ctx.tool_call_id] = GateOutcome(
            approval_id=str(approval.pk), status=status, decided_by=approval.decider_label()
        )
        self._report(approval, ctx.call, approvers)
        if status == ApprovalStatus.APPROVED:
            return Rewrite(arguments)
        return Block(decision_message(approval, self.language))

    async def _abandon(
        self, approval: ApprovalRequest, info: ActionInfo, ctx: HookContext, approvers: list[str]
    ) -> None:
        """The run stopped while waiting: cancel the request, tell the chat, record the attempt."""
        try:
            await database_sync_to_async(_cancel)(approval.pk)
            approval = await database_sync_to_async(_load)(approval.pk)
            self._report(approval, ctx.call, approvers)
            if self.audit is not None:
                await self.audit.record(
                    info=info,
                    tool_call_id=ctx.tool_call_id,
                    arguments=ctx.tool_args,
                    status="error",
                    error=f"the run stopped while the call waited for approval ({approval.status})",
                    approval_ref=str(approval.pk),
                )
        except Exception:
            logger.exception("could not close approval %s after the run stopped", approval.pk)
