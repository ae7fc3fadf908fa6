"""AuditLog: the one writer of connector call logs. Exactly one row per attempted connector call.

Record first, or do not run: a call that every other guard rail allowed gets its row from
:class:`CallRecorder`, the last pre-tool-use hook, *before* it runs (status ``error``, "its end was not
recorded"); if that row cannot be written the call is blocked and the model is told why. After the call
this hook completes that row with the outcome (``ok``/``error``, the adapter's HTTP status, row count,
latency and sizes). A call that never ran gets its row here, after the fact: a guard rail blocked it
(``blocked_read_only``, ``blocked_rate_limit``, or ``rejected``/``expired`` by an approval, with the
approval's id) or its arguments were invalid (``error``). A call abandoned while it waited for approval
(the run was stopped) is recorded by the gate through :meth:`AuditHook.record`; a call stopped while it
ran keeps its "not recorded" row, since no post-hook runs for a stopped run.

Given the run's batched writes (``writes``: the run's event sink), neither half costs the run a database
hop or a transaction of its own: the row before the call is a durable write of the sink's next batch,
awaited until that batch has committed (so it is on disk before the call runs, and a refused write still
blocks the call), and its completion after the call joins the next batch without being waited for (a
row whose completion is lost with its batch keeps saying its end was not recorded, which is true).

Nothing about a value can keep a row from being written: arguments and errors are stored in the safe
form of :mod:`connectors.redaction` (NaN, NUL, lone surrogates and non-JSON objects spelled out).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, connection, transaction
from django.utils import translation
from django.utils.translation import gettext as _

from agents.engine.hooks import (
    ALLOW,
    OUTCOME_BLOCKED,
    OUTCOME_OK,
    OUTCOME_TIMEOUT,
    Allow,
    Block,
    HookContext,
    PostToolUseHook,
    PostVerdict,
    PreToolUseHook,
    PreVerdict,
)
from agents.engine.run_context import RunContext
from agents.engine.run_writes import RunWrites
from agents.engine.strict_json import text_safe
from agents.engine.tools import ToolResult
from connectors.kinds import adapter_for
from connectors.models import CallStatus, Connector, ConnectorAction, ConnectorCallLog
from connectors.redaction import redact
from connectors.scrub import scrub
from connectors.services import MAX_ERROR_CHARS, call_log_arguments, call_log_record, retrieved_for_log
from hooks import addressed
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.state import RunGuardState

logger = logging.getLogger(__name__)

PRIORITY = 10
# The recorder runs after every pre-hook that may block or rewrite a call (read-only 10, approval 20,
# rate limit 30): it records exactly the call that is about to run.
RECORD_PRIORITY = 1000
#: The error of a row written before its call ran, until the call's end replaces it.
NOT_FINISHED = "the call started but its end was not recorded (the run was stopped or the process ended)"
# Names of the pre-hooks whose blocks have their own call-log status.
BLOCK_STATUSES = {
    "read_only_guard": CallStatus.BLOCKED_READ_ONLY,
    "rate_limit": CallStatus.BLOCKED_RATE_LIMIT,
}
GATE_STATUSES = {"rejected": CallStatus.REJECTED, "expired": CallStatus.EXPIRED}


def not_recorded_message(language: str | None = None) -> str:
    """What the model sees for a call that was not made because its audit row could not be written."""
    with translation.override(language):
        return _("the call could not be recorded in the audit log, so it was not made")


class AuditHook(PostToolUseHook):
    """Writes the call-log row of every connector call attempt of one run."""

    name = "audit_log"
    priority = PRIORITY

    def __init__(
        self,
        *,
        context: RunContext,
        catalog: ActionCatalog,
        state: RunGuardState,
        language: str | None = None,
        writes: RunWrites | None = None,
    ) -> None:
        self.context = context
        self.catalog = catalog
        self.state = state
        self.language = language
        self.writes = writes
        self.recorder = CallRecorder(self)
        # tool call id -> the row written before the call ran (completed after it)
        self._started: dict[str, int] = {}

    async def record_start(self, ctx: HookContext, info: ActionInfo) -> int | None:
        """Write the row of a call about to run (raises when the database refuses it) and return the
        configuration version the guard rails judged it under (``None``: not known). The secrets to redact
        come with the call's guard-rail configuration, which the guard rails before it read."""
        config = await self.state.call_config(self.context.org_id, ctx.tool_call_id, info.connector_id)
        write = CallLogStart(
            context=self.context,
            info=info,
            tool_call_id=ctx.tool_call_id,
            arguments=dict(ctx.tool_args),
            secrets=config.redaction_secrets if config is not None else (),
            replayed=ctx.replayed,
        )
        if self.writes is not None:
            self._started[ctx.tool_call_id] = await self.writes.write_durable(write)
        else:
            self._started[ctx.tool_call_id] = await sync_to_async(write.apply)()
        return config.version if config is not None else None

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        info = self.catalog.get(ctx.tool_name)
        if info is None:
            return ALLOW  # not a connector call
        gate = self.state.take_approval(ctx.tool_call_id)
        self.state.forget_call(ctx.tool_call_id)
        approval_ref = gate.approval_id if gate is not None else ""
        started = self._started.pop(ctx.tool_call_id, None)
        if started is not None:
            end = CallLogEnd(
                pk=started,
                status=CallStatus.OK if ctx.outcome == OUTCOME_OK else CallStatus.ERROR,
                error=_error_of(ctx.outcome, result),
                approval_ref=approval_ref,
                result=result,
            )
            if self.writes is not None:
                self.writes.write_later(end)
            else:
                await sync_to_async(end.apply)()
            return ALLOW
        if ctx.outcome == OUTCOME_TIMEOUT:
            await sync_to_async(_complete_cancelled)(
                context=self.context,
                info=info,
                tool_call_id=ctx.tool_call_id,
                arguments=dict(ctx.tool_args),
                approval_ref=approval_ref,
                error=result.error or "timed out",
            )
            return ALLOW
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
        return ALLOW

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
        await sync_to_async(_write_call)(
            self.context,
            info,
            tool_call_id=tool_call_id,
            arguments=dict(arguments),
            status=status,
            http_status=getattr(call, "http_status", None),
            row_count=getattr(call, "row_count", None),
            latency_ms=float(getattr(call, "latency_ms", 0.0) or 0.0),
            request_bytes=int(getattr(call, "request_bytes", 0) or 0),
            response_bytes=int(getattr(call, "response_bytes", 0) or 0),
            retrieved=tuple(getattr(call, "retrieved", ())),
            error=error,
            approval_ref=approval_ref,
            secrets=secrets,
        )


class CallRecorder(PreToolUseHook):
    """The audit log's pre-tool-use half: records a connector call just before it runs, or blocks it.

    It lets the call run pinned to the configuration version the guard rails judged it under
    (``Allow(config_version=...)``): the engine hands the tool that version on the call's context, and the
    tool takes the connector's config cached for it, without a read of its own."""

    name = "audit_record"
    priority = RECORD_PRIORITY

    def __init__(self, audit: AuditHook) -> None:
        self.audit = audit

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        info = self.audit.catalog.get(ctx.tool_name)
        if info is None:
            return ALLOW  # not a connector call
        try:
            version = await self.audit.record_start(ctx, info)
        except Exception as exc:  # any failure to record: the call is not made
            logger.error(
                "could not record connector call %s before making it (%s); it was not made",
                ctx.tool_call_id,
                type(exc).__name__,
                extra={"org_id": self.audit.context.org_id, "tool_call_id": ctx.tool_call_id},
            )
            return Block(not_recorded_message(self.audit.language))
        return ALLOW if version is None else Allow(config_version=version)


def _error_of(outcome: str, result: ToolResult) -> str:
    if outcome == OUTCOME_OK:
        return ""
    error = result.error or result.content or ""
    if outcome == OUTCOME_TIMEOUT:
        return f"{error}; the call was cancelled"
    return error


def _write(**fields: Any) -> ConnectorCallLog:
    fields["error"] = text_safe(fields.get("error") or "")
    try:
        with transaction.atomic():
            row = call_log_record(**fields)
            _links_checked(row)
            return row
    except IntegrityError:
        # The connector or action was deleted mid-run: keep the row, without the links.
        _links_deferred()
        return call_log_record(**{**fields, "connector_id": None, "action_id": None})


def _links_checked(row: ConnectorCallLog) -> None:
    """Check the row's foreign keys now, inside its savepoint, when it rides a larger transaction (a
    run's event batch): Django defers them to the commit, where a deleted connector would refuse the
    whole batch instead of this row's links. Raises ``IntegrityError`` when a link is gone."""
    if not any(connection.savepoint_ids):
        return  # its own transaction: the commit checks them, and the caller retries without links
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # one round trip: checked now, deferred again after
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED")
        return
    # Elsewhere (SQLite: one writer at a time, so nothing can delete them before the commit).
    if (
        row.action_id is not None
        and not ConnectorAction.objects.for_org(row.organization_id).filter(pk=row.action_id).exists()
    ):
        raise IntegrityError("the call's action was deleted")
    if (
        row.connector_id is not None
        and not Connector.objects.for_org(row.organization_id).filter(pk=row.connector_id).exists()
    ):
        raise IntegrityError("the call's connector was deleted")


def _links_deferred() -> None:
    """Django's default again after :func:`_links_checked` refused (the savepoint's rollback may keep
    the IMMEDIATE mode)."""
    if connection.vendor == "postgresql" and connection.in_atomic_block and not connection.needs_rollback:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def _write_call(
    context: RunContext,
    info: ActionInfo,
    *,
    tool_call_id: str,
    arguments: dict[str, Any],
    status: str,
    error: str,
    **outcome: Any,
) -> ConnectorCallLog:
    """One call-log row for ``info``'s action (the connector and action linked when they still exist)."""
    return _write(
        context=context,
        tool_name=info.tool_name,
        connector_id=info.connector_id,
        action_id=info.action_id,
        is_write=info.is_write,
        tool_call_id=tool_call_id,
        arguments=call_log_arguments(info.kind, arguments),
        status=status,
        error=error,
        mcp_method=adapter_for(info.kind).call_log_method,
        **outcome,
    )


@dataclass(frozen=True, slots=True)
class CallLogStart:
    """The run write of a call's row before the call runs (a durable write: the call runs only once it
    has committed). ``apply`` returns the row's id; a resumed run that makes again a call whose end was
    never recorded reuses that call's row."""

    context: RunContext
    info: ActionInfo
    tool_call_id: str
    arguments: dict[str, Any]
    secrets: tuple[str, ...]
    replayed: bool

    def apply(self) -> int:
        context, tool_call_id = self.context, self.tool_call_id
        if self.replayed and context.org_id is not None:  # a run without an organisation has no rows
            earlier = (
                ConnectorCallLog.objects.filter(
                    organization_id=context.org_id,
                    run_id=str(context.run_id),
                    tool_call_id=tool_call_id[:128],
                    status=CallStatus.ERROR,
                    error=NOT_FINISHED,
                )
                .values_list("pk", flat=True)
                .first()
            )
            if earlier is not None:
                return earlier
        row = _write_call(
            context,
            self.info,
            tool_call_id=tool_call_id,
            arguments=self.arguments,
            status=CallStatus.ERROR,
            error=NOT_FINISHED,
            secrets=self.secrets,
        )
        return row.pk


@dataclass(frozen=True, slots=True)
class CallLogEnd:
    """The run write that completes a call's row with how the call ended. In a savepoint of the batch it
    rides: refused, it is logged and costs the batch (the run's events) nothing."""

    pk: int
    status: str
    error: str
    approval_ref: str
    result: ToolResult

    def apply(self) -> None:
        call = getattr(self.result, "call", None)  # connectors.tools.ConnectorToolResult carries the outcome
        secrets: tuple[str, ...] = tuple(getattr(self.result, "secrets", ()) or ())
        try:
            with transaction.atomic():
                addressed.call_logs().filter(pk=self.pk).update(
                    status=self.status,
                    error=text_safe(scrub(self.error, secrets))[:MAX_ERROR_CHARS],
                    approval_ref=self.approval_ref,
                    http_status=getattr(call, "http_status", None),
                    row_count=getattr(call, "row_count", None),
                    latency_ms=round(float(getattr(call, "latency_ms", 0.0) or 0.0), 3),
                    request_bytes=max(0, int(getattr(call, "request_bytes", 0) or 0)),
                    response_bytes=max(0, int(getattr(call, "response_bytes", 0) or 0)),
                    retrieved=retrieved_for_log(getattr(call, "retrieved", ())),
                )
        except Exception as exc:
            logger.error(
                "could not record the end of connector call log %s (%s)", self.pk, type(exc).__name__
            )


def _complete_cancelled(
    *,
    context: RunContext,
    info: ActionInfo,
    tool_call_id: str,
    arguments: dict[str, Any],
    approval_ref: str,
    error: str,
) -> None:
    """Complete the row the tool wrote for a timed-out call (its call id, when the tool did not know it);
    write one if the tool never started."""
    call_id = tool_call_id[:128]
    candidates = (
        ConnectorCallLog.objects.filter(
            organization_id=context.org_id,
            run_id=str(context.run_id),
            tool_name=info.tool_name,
            tool_call_id__in=("", call_id),
            status=CallStatus.ERROR,
        ).order_by("id")
        if context.org_id is not None
        else ConnectorCallLog.objects.none()  # a run without an organisation has no rows
    )
    wanted = redact(call_log_arguments(info.kind, arguments))
    for row in candidates:
        if row.arguments == wanted:
            addressed.call_logs().filter(pk=row.pk).update(tool_call_id=call_id, approval_ref=approval_ref)
            return
    _write_call(
        context,
        info,
        tool_call_id=tool_call_id,
        arguments=arguments,
        status=CallStatus.ERROR,
        error=error,
        approval_ref=approval_ref,
    )
