"""AuditLog: the one writer of connector call logs. Exactly one row per attempted connector call.

It runs after every call the model asked for, whatever happened: the call ran (``ok``/``error``, with
the adapter's HTTP status, row count, latency and sizes when the tool reports them), a guard rail
blocked it (``blocked_read_only``, ``blocked_rate_limit``, or ``rejected``/``expired`` by an approval,
with the approval's id), or it never ran (invalid arguments: ``error``). A call abandoned while it
waited for approval (the run was stopped) is recorded by the gate through :meth:`record`. A call cancelled
while it ran (a timeout, or the run was stopped) is the one case the connector tool records itself, since
only the tool sees that cancellation and no post-hook runs for a stopped run; for a timeout this hook
then completes that row with the tool call id and approval reference the tool cannot know.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction

from agents.engine.hooks import (
    OUTCOME_BLOCKED,
    OUTCOME_OK,
    OUTCOME_TIMEOUT,
    HookContext,
    HookResult,
    PostToolUseHook,
)
from agents.engine.tools import ToolResult
from connectors.models import CallStatus, ConnectorCallLog
from connectors.redaction import redact
from connectors.services import CallContext, call_log_record
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.state import RunGuardState

logger = logging.getLogger(__name__)

PRIORITY = 10
# Names of the pre-hooks whose blocks have their own call-log status.
BLOCK_STATUSES = {
    "read_only_guard": CallStatus.BLOCKED_READ_ONLY,
    "rate_limit": CallStatus.BLOCKED_RATE_LIMIT,
}
GATE_STATUSES = {"rejected": CallStatus.REJECTED, "expired": CallStatus.EXPIRED}


class AuditHook(PostToolUseHook):
    """Writes the call-log row of every connector call attempt of one run."""

    name = "audit_log"
    priority = PRIORITY

    def __init__(self, *, context: CallContext, catalog: ActionCatalog, state: RunGuardState) -> None:
        self.context = context
        self.catalog = catalog
        self.state = state

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> HookResult | None:
        info = self.catalog.get(ctx.tool_name)
        if info is None:
            return None  # not a connector call
        gate = self.state.take_approval(ctx.tool_call_id)
        self.state.forget_call(ctx.tool_call_id)
        approval_ref = gate.approval_id if gate is not None else ""
        if ctx.outcome == OUTCOME_TIMEOUT:
            await sync_to_async(_complete_cancelled)(
                context=self.context,
                info=info,
                tool_call_id=ctx.tool_call_id,
                arguments=dict(ctx.tool_args),
                approval_ref=approval_ref,
                error=result.error or "timed out",
            )
            return None
        if ctx.outcome == OUTCOME_OK:
            status = CallStatus.OK
        elif ctx.outcome == OUTCOME_BLOCKED:
            status = BLOCK_STATUSES.get(ctx.blocked_by or "", CallStatus.ERROR)
            if gate is not None and ctx.blocked_by == "approval_gate":
                status = GATE_STATUSES.get(gate.status, CallStatus.ERROR)
        else:
            status = CallStatus.ERROR
        await self.record(
            info=info,
            tool_call_id=ctx.tool_call_id,
            arguments=ctx.tool_args,
            status=status,
            error="" if status == CallStatus.OK else (result.error or result.content or ""),
            approval_ref=approval_ref,
            result=result,
        )
        return None

    async def record(
        self,
        *,
        info: ActionInfo,
        tool_call_id: str,
        arguments: Mapping[str, Any],
        status: str,
        error: str = "",
        approval_ref: str = "",
        result: ToolResult | None = None,
    ) -> None:
        """Write one call-log row (secrets redacted from the arguments and the error)."""
        call = getattr(result, "call", None)  # connectors.tools.ConnectorToolResult carries the outcome
        secrets: tuple[str, ...] = tuple(getattr(result, "secrets", ()) or ())
        await sync_to_async(_write)(
            context=self.context,
            tool_name=info.tool_name,
            arguments=dict(arguments),
            status=status,
            connector_id=info.connector_id,
            action_id=info.action_id,
            is_write=info.is_write,
            tool_call_id=tool_call_id,
            http_status=getattr(call, "http_status", None),
            row_count=getattr(call, "row_count", None),
            latency_ms=float(getattr(call, "latency_ms", 0.0) or 0.0),
            request_bytes=int(getattr(call, "request_bytes", 0) or 0),
            response_bytes=int(getattr(call, "response_bytes", 0) or 0),
            error=error,
            approval_ref=approval_ref,
            secrets=secrets,
        )


def _write(**fields: Any) -> None:
    try:
        with transaction.atomic():
            call_log_record(**fields)
    except IntegrityError:
        # The connector or action was deleted mid-run: keep the row, without the links.
        call_log_record(**{**fields, "connector_id": None, "action_id": None})


def _complete_cancelled(
    *,
    context: CallContext,
    info: ActionInfo,
    tool_call_id: str,
    arguments: dict[str, Any],
    approval_ref: str,
    error: str,
) -> None:
    """Complete the row the tool wrote for a timed-out call (its call id, when the tool did not know it);
    write one if the tool never started."""
    call_id = tool_call_id[:128]
    candidates = ConnectorCallLog.objects.filter(
        organization_id=context.organization_id,
        run_id=str(context.run_id),
        tool_name=info.tool_name,
        tool_call_id__in=("", call_id),
        status=CallStatus.ERROR,
    ).order_by("id")
    wanted = redact(arguments)
    for row in candidates:
        if row.arguments == wanted:
            ConnectorCallLog.objects.filter(pk=row.pk).update(tool_call_id=call_id, approval_ref=approval_ref)
            return
    _write(
        context=context,
        tool_name=info.tool_name,
        arguments=arguments,
        status=CallStatus.ERROR,
        connector_id=info.connector_id,
        action_id=info.action_id,
        is_write=info.is_write,
        tool_call_id=tool_call_id,
        error=error,
        approval_ref=approval_ref,
    )
