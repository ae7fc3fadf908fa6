"""Connector actions as engine tools.

Each active action of an active connector becomes one :class:`ConnectorTool` named
``<connector>__<action>``. A call takes the action, as the organisation's configuration is now (so a
connector deactivated or moved mid-run is not called), with its connector's config and decrypted
credentials, from the process's cache for the organisation's configuration version: the version the
guard rails judged this very call under (``ToolCallContext.config_version``, which the audit log's
recorder pins), else one it reads itself. Only a cache miss loads and decrypts them, in a worker thread.
Then it calls the adapter. It returns a :class:`ConnectorToolResult`, which also carries the adapter's
outcome (HTTP status, row count, latency, sizes) and the secrets to redact.

A tool is bound to the :class:`~agents.engine.run_context.RunContext` of its run (organisation, user,
agent, conversation, run), which its call-log rows record. Exactly one
:class:`~connectors.models.ConnectorCallLog` row is written per call, through
:func:`connectors.services.call_log_record`: by the tool itself, whatever happens, or, with
``call_log_by_hook`` (a run's tools: the runtime adds the guard rails), by the run's audit hook, which
writes the row before the call runs and completes it from the result (so a call cancelled while it ran
keeps it); the tool then writes only the row of a call cancelled mid-flight (no post-hook sees those).

Each call is handed its :class:`~agents.engine.tool_context.ToolCallContext` by the engine: its tool call
id (recorded on the call log) and its idempotency key ``<run_id>:<tool_call_id>``, under which the run's
tool ledger recorded the call before it was made, so a resumed run never makes it twice. An HTTP
call of a run also sends a key derived from it to the remote API on write requests
(:mod:`connectors.idempotency`), so an API that honours ``Idempotency-Key`` answers a repeat once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Artifact, Tool, ToolResult
from connectors.adapter_types import CallOutcome
from connectors.configs import connector_secret_values
from connectors.idempotency import connector_idempotency_key
from connectors.kinds import adapter_for
from connectors.mcp.config import StdioNotAllowed
from connectors.models import ConnectorAction
from connectors.scrub import scrub
from connectors.selectors import RunActionsSource, actions_for_tools, run_connector_actions
from connectors.services import call_log_record
from platform_core.config_cache import config_cached, config_cached_peek
from platform_core.crypto import SecretDecryptError
from platform_core.models import ConfigVersion

logger = logging.getLogger(__name__)

MAX_TOOL_NAME = 64
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


FREE_FORM_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "sql": {
            "type": "string",
            "description": "Exactly one read-only SQL statement (SELECT or WITH ... SELECT), in the dialect"
            " the tool's description names.",
        }
    },
    "required": ["sql"],
    "additionalProperties": False,
}


def tool_name_for(connector_name: str, action_name: str) -> str:
    """``<connector>__<action>`` made to match ``^[a-zA-Z0-9_-]{1,64}$`` (long names end in a hash)."""
    raw = f"{connector_name}__{action_name}"
    name = _NAME_UNSAFE.sub("_", raw).strip("-") or "tool"
    if len(name) > MAX_TOOL_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - 9]}_{digest}"
    return name


def tool_description_for(action: ConnectorAction) -> str:
    """What the model reads: the action's own description, where it goes, and whether it writes."""
    connector = action.connector
    told = adapter_for(connector.kind).tool_text(action)
    text = (action.description or "").strip()
    summary = text.splitlines()[0] if text else (told.summary or action.name.replace("_", " ").capitalize())
    rest = "\n".join(text.splitlines()[1:]).strip()
    lines = [f"{summary} ({connector.name}: {told.target})"]
    if rest:
        lines.append(rest)
    if connector.description:
        lines.append(f"System: {connector.description.strip()}")
    lines.extend(told.notes)
    lines.append(
        "This action CHANGES data in the system."
        if action.is_write
        else "Read-only: it does not change data."
    )
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What one call needs, loaded and decrypted in a worker thread."""

    connector_id: Any
    action_id: Any
    kind: str
    config: Any  # the kind's own (connectors.kinds.ConnectorKindAdapter.call_config)
    spec: Any
    is_write: bool
    secrets: tuple[str, ...]


class ConnectorTool(Tool):
    """One connector action as an engine tool, bound to one run (``context``). ``call_log_by_hook``: the
    run's audit hook writes the call-log rows."""

    def __init__(
        self,
        action: ConnectorAction,
        context: RunContext,
        *,
        call_log_by_hook: bool = False,
        run_secrets: tuple[str, ...] = (),
    ) -> None:
        connector = action.connector
        self.name = tool_name_for(connector.name, action.name)
        self.description = tool_description_for(action)
        self.parameters = (
            FREE_FORM_PARAMETERS if action.free_form else (action.parameters or {"type": "object"})
        )
        self.is_write = action.is_write
        self.connector_id = connector.pk
        self.action_id = action.pk
        self.context = context
        self.call_log_by_hook = call_log_by_hook
        # The other connectors' secrets of the run: a target may answer with one of them.
        self.run_secrets = run_secrets
        self.timeout = adapter_for(connector.kind).tool_timeout(action)

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult:
        started = time.perf_counter()
        tool_call_id = ctx.tool_call_id
        prepared: _Prepared | None = None
        try:
            loaded = self._cached_call(ctx)
            if loaded is None:
                loaded = await sync_to_async(_prepare_call)(self.context.org_id, self.action_id)
            artifacts: tuple[Artifact, ...] = ()
            if isinstance(loaded, str):
                outcome = _failed(loaded, started)
            else:
                prepared = loaded
                outcome, artifacts = await _call_adapter(
                    prepared, kwargs, self._idempotency_key(tool_call_id, kwargs)
                )
        except asyncio.CancelledError:
            if not self.call_log_by_hook:  # else the audit hook recorded the call before it ran
                outcome = _failed("the call was cancelled (timeout or stop)", started)
                await asyncio.shield(self._record(prepared, kwargs, outcome, tool_call_id))
            raise
        except Exception as exc:
            logger.exception(
                "connector tool %s failed unexpectedly",
                self.name,
                extra={"org_id": self.context.org_id},
            )
            outcome = _failed(f"unexpected error ({type(exc).__name__})", started)
        if not self.call_log_by_hook:
            await self._record(prepared, kwargs, outcome, tool_call_id)
        own = prepared.secrets if prepared is not None else ()
        return _result(outcome, own + tuple(s for s in self.run_secrets if s not in own), artifacts)

    def _cached_call(self, ctx: ToolCallContext) -> _Prepared | str | None:
        """What the call needs from the process's cache, for the configuration version the guard rails
        judged this call under (``ctx.config_version``); ``None``: not known without the database."""
        if ctx.config_version is None:
            return None
        owner = ("organization", self.context.org_id)
        found, value = config_cached_peek(owner, ctx.config_version, _call_key(self.action_id))
        return value if found else None

    def _idempotency_key(self, tool_call_id: str, args: Mapping[str, Any]) -> str | None:
        """The key of this call when a run makes it (a run id and a tool call id are known)."""
        if not self.context.run_id or not tool_call_id:
            return None
        return connector_idempotency_key(
            run_id=self.context.run_id, tool_call_id=tool_call_id, arguments=args
        )

    async def _record(
        self, prepared: _Prepared | None, args: Mapping[str, Any], outcome: CallOutcome, tool_call_id: str
    ) -> None:
        await sync_to_async(call_log_record)(
            context=self.context,
            tool_name=self.name,
            arguments=args,
            status="ok" if outcome.status == "ok" else "error",
            connector_id=prepared.connector_id if prepared is not None else None,
            action_id=prepared.action_id if prepared is not None else None,
            is_write=prepared.is_write if prepared is not None else self.is_write,
            tool_call_id=tool_call_id,
            http_status=outcome.http_status,
            row_count=outcome.row_count,
            latency_ms=outcome.latency_ms,
            request_bytes=outcome.request_bytes,
            response_bytes=outcome.response_bytes,
            error=outcome.error,
            secrets=prepared.secrets if prepared is not None else (),
            mcp_method=adapter_for(prepared.kind).call_log_method if prepared is not None else "",
        )


def _prepare_call(organization_id: int | None, action_id: Any) -> _Prepared | str:
    """What the call needs as the organisation's configuration is now: one query for its configuration
    version; the action, its connector's config and decrypted secrets come from the process's cache for
    that version (:mod:`platform_core.config_cache`), loaded again after any admin change to a connector
    or an action (each bumps the version). Without a version row, loaded afresh every call."""
    version = ConfigVersion.objects.filter(pk=organization_id).values_list("version", flat=True).first()
    if version is None:
        return _load_call(organization_id, action_id)
    return config_cached(
        ("organization", organization_id),
        version,
        _call_key(action_id),
        lambda: _load_call(organization_id, action_id),
    )


def _call_key(action_id: Any) -> str:
    return f"connector_call:{action_id}"


def _load_call(organization_id: int | None, action_id: Any) -> _Prepared | str:
    """Load the action for this organisation, check it may still run, decrypt the connector's secrets."""
    action = (
        ConnectorAction.objects.select_related("connector")
        .filter(pk=action_id, organization_id=organization_id, connector__organization_id=organization_id)
        .first()
    )
    if action is None:
        return "this action no longer exists"
    connector = action.connector
    if not connector.is_active or not action.is_active:
        return f"the {'connector' if not connector.is_active else 'action'} has been deactivated by an admin"
    adapter = adapter_for(connector.kind)
    try:
        config, spec = adapter.call_config(connector), adapter.action_spec(action)
        secrets = connector_secret_values(connector)
    except StdioNotAllowed:
        return "the operator does not allow this connector's local MCP command (MCP_STDIO_ALLOWED_COMMANDS)"
    except SecretDecryptError:
        logger.error("connector %s: its credentials cannot be decrypted", connector.pk)
        return "the connector's credentials cannot be decrypted; an admin must enter them again"
    return _Prepared(
        connector_id=connector.pk,
        action_id=action.pk,
        kind=connector.kind,
        config=config,
        spec=spec,
        is_write=action.is_write,
        secrets=secrets,
    )


async def _call_adapter(
    prepared: _Prepared, args: Mapping[str, Any], idempotency_key: str | None
) -> tuple[CallOutcome, tuple[Artifact, ...]]:
    called = await adapter_for(prepared.kind).call(
        prepared.config, prepared.spec, args, idempotency_key=idempotency_key, is_write=prepared.is_write
    )
    return called.outcome, called.artifacts


def _failed(message: str, started: float) -> CallOutcome:
    return CallOutcome(
        status="error", content="", error=message, latency_ms=(time.perf_counter() - started) * 1000
    )


@dataclass(frozen=True, slots=True)
class ConnectorToolResult(ToolResult):
    """A connector call's result with its outcome, for the audit hook that writes the call log."""

    call: CallOutcome | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)


def _result(
    outcome: CallOutcome, secrets: tuple[str, ...], artifacts: tuple[Artifact, ...] = ()
) -> ToolResult:
    content = scrub(outcome.content, secrets)
    if outcome.status == "ok":
        return ConnectorToolResult(content=content, call=outcome, secrets=secrets, artifacts=artifacts)
    error = scrub(outcome.error, secrets) or "the call failed"
    return ConnectorToolResult(
        content=f"Error: {error}",
        is_error=True,
        error=error,
        call=outcome,
        secrets=secrets,
        artifacts=artifacts,
    )


def connector_tools_for(
    *,
    organization_id: int,
    connector_ids: Iterable[Any],
    context: RunContext,
    call_log_by_hook: bool = False,
) -> list[Tool]:
    """The tools of the given connectors of one organisation (others' connector ids are ignored).

    Synchronous (one query); from async code use :func:`aconnector_tools_for`. Nothing is decrypted
    here: each call decrypts what it needs.
    """
    if context.org_id != organization_id:
        raise ValueError("the call context belongs to another organisation")
    return [
        ConnectorTool(a, context, call_log_by_hook=call_log_by_hook)
        for a in actions_for_tools(organization_id=organization_id, connector_ids=connector_ids)
        if adapter_for(a.connector.kind).tools_from_connectors
    ]


async def aconnector_tools_for(
    *,
    organization_id: int,
    connector_ids: Iterable[Any],
    context: RunContext,
    call_log_by_hook: bool = False,
) -> list[Tool]:
    """:func:`connector_tools_for` for async callers (runs the query in a worker thread)."""
    ids = list(connector_ids)
    return await sync_to_async(connector_tools_for)(
        organization_id=organization_id, connector_ids=ids, context=context, call_log_by_hook=call_log_by_hook
    )


def connector_tools_for_run(run: RunActionsSource) -> list[Tool]:
    """The run's connector tools, as ``agents.runtime.tools_for`` builds them for every run.

    Synchronous (one query). The runtime always adds the guard rails of ``hooks`` to a run, whose audit
    hook writes the call-log rows (``hooks.registry.GuardRails.writes_call_logs``), so these tools leave
    that to it (``call_log_by_hook``). Each result is redacted of the run's ``run_secrets`` too (every
    connector's, set by the run manager).
    """
    context = run.context
    secrets = tuple(run.run_secrets)
    return [
        ConnectorTool(action, context, call_log_by_hook=True, run_secrets=secrets)
        for action in run_connector_actions(run)
        if adapter_for(action.connector.kind).tools_from_connectors
    ]
