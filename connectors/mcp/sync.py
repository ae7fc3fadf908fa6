""" "Sync tools": an MCP server's tools as the connector's actions, reported like an OpenAPI import.

A tool is matched to its action by its name on the server (``mcp_tool``). New tools are added; tools
whose description, input schema or annotations changed are updated; actions of tools the server no
longer lists are *deactivated*, never deleted (their call logs keep the link, and an admin's edits
survive if the tool comes back; it is then reactivated and reported as added). An admin's "writes data"
override and an action they deactivated are kept. Whether a tool writes comes from its annotations: only
``readOnlyHint: true`` makes it a read (:meth:`~connectors.models.ConnectorAction.derived_is_write`).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.db import transaction
from mcp import types

from agents.engine.strict_json import text_safe
from connectors.action_imports import ImportReport, actions_retire, import_audit_write
from connectors.mcp.client import McpFailure, ToolListing, mcp_list_tools
from connectors.mcp.config import McpConfig, StdioNotAllowed, mcp_config_for
from connectors.mcp.lookalikes import Lookalike, lookalikes_for_connector
from connectors.mcp.pool import SessionOpenError, session_once
from connectors.models import ActionSource, Connector, ConnectorAction, ConnectorKind, _schema_problem
from platform_core.crypto import SecretDecryptError

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_ACTION_NAME = 64
MAX_TOOL_NAME = 200  # ConnectorAction.mcp_tool
# A changed claim or contract withdraws an admin's confirmation of the tool as a read.
_CONFIRMED_FIELDS = ("description", "parameters", "mcp_annotations")


@dataclass(frozen=True, slots=True)
class SyncReport(ImportReport):
    """An import's report (``skipped`` holds ``(tool, reason)`` pairs), with the confirmed reads a sync
    withdrew and the other connectors' tools this one's resemble."""

    unconfirmed: tuple[str, ...] = ()
    lookalikes: tuple[Lookalike, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            **ImportReport.as_dict(self),
            "unconfirmed": list(self.unconfirmed),
            "warnings": [lookalike.as_dict() for lookalike in self.lookalikes],
        }


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def action_name_for_tool(tool_name: str) -> str:
    """The tool's name as an action name (letters, digits, ``_``, ``-``; long names end in a hash)."""
    name = _UNSAFE.sub("_", tool_name).strip("_") or "tool"
    if name != tool_name or len(name) > MAX_ACTION_NAME:
        if len(name) > MAX_ACTION_NAME:
            digest = hashlib.sha256(tool_name.encode()).hexdigest()[:8]
            name = f"{name[: MAX_ACTION_NAME - 9]}_{digest}"
    return name


def _annotations(tool: types.Tool) -> dict[str, Any]:
    if tool.annotations is None:
        return {}
    dumped = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return {k: dumped[k] for k in _ANNOTATION_KEYS if k in dumped}


def _description(tool: types.Tool) -> str:
    title = (tool.title or (tool.annotations.title if tool.annotations else None) or "").strip()
    text = (tool.description or "").strip()
    return f"{title}\n{text}".strip() if title and title not in text else text


async def _listing(config: McpConfig) -> ToolListing | McpFailure:
    try:
        async with session_once(config) as pooled:
            return await mcp_list_tools(config, pooled=pooled)
    except SessionOpenError as exc:
        return McpFailure(str(exc))


def mcp_tools_list(*, connector: Connector) -> ToolListing | McpFailure:
    """The server's tools for ``connector`` as it is in memory (saved or not: a new connector is asked
    before it is stored), in a session opened and closed for this (sync callers)."""
    try:
        config = mcp_config_for(connector)
    except StdioNotAllowed:
        return McpFailure(
            "the operator does not allow this local MCP command (MCP_STDIO_ALLOWED_COMMANDS)",
            configuration=True,
        )
    except SecretDecryptError:
        return McpFailure("the stored credentials cannot be decrypted; enter them again", configuration=True)
    return async_to_sync(_listing)(config)


def connector_sync_mcp_tools(
    *, connector: Connector, actor: User | None, ip_address: str | None = None
) -> SyncReport | McpFailure:
    """List the server's tools and store them as the connector's actions (sync callers: admin, API)."""
    if connector.kind != ConnectorKind.MCP:
        return McpFailure("only MCP connectors have tools to sync", configuration=True)
    stored = Connector.objects.filter(pk=connector.pk, organization_id=connector.organization_id).first()
    if stored is None:
        return McpFailure("no such connector", configuration=True)
    listing = mcp_tools_list(connector=stored)
    if isinstance(listing, McpFailure):
        return listing
    return connector_apply_mcp_tools(
        connector=connector,
        tools=listing.tools,
        actor=actor,
        ip_address=ip_address,
        rejected=listing.rejected,
    )


def mcp_sync_after_save(
    *, connector: Connector, actor: User | None, ip_address: str | None = None
) -> SyncReport | McpFailure | None:
    """ "Sync tools" after an MCP connector was saved (``None`` for other connectors or inactive ones)."""
    if connector.kind != ConnectorKind.MCP or not connector.is_active:
        return None
    return connector_sync_mcp_tools(connector=connector, actor=actor, ip_address=ip_address)


def _unstorable(value: Any, depth: int = 0) -> bool:
    """Whether a value holds what no database or JSON answer carries as it is (NUL, lone surrogates,
    a number that is not finite), or nests absurdly."""
    if depth > 64:
        return True
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, str):
        return "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_unstorable(k, depth + 1) or _unstorable(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_unstorable(v, depth + 1) for v in value)
    return False


def _tool_problem(tool: types.Tool) -> str:
    """Why one listed tool cannot become an action ('' when it can); the sync skips it with the reason."""
    if not tool.name or not tool.name.strip():
        return "the tool has no name"
    if len(tool.name) > MAX_TOOL_NAME:
        return f"its name is longer than {MAX_TOOL_NAME} characters"
    if _unstorable(tool.name) or any(c < " " for c in tool.name):
        return "its name contains control characters or lone surrogates"
    schema = tool.input_schema or {"type": "object"}
    if _unstorable(schema):
        return (
            "its input schema contains values that cannot be stored (NUL characters, lone surrogates "
            "or numbers that are not finite)"
        )
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not usable: not an object"
    problem = _schema_problem(dict(schema))
    return f"its input schema is not usable: {problem}" if problem else ""


def _validation_reason(exc: ValidationError) -> str:
    messages = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
    parts = [
        f"{field}: {' '.join(str(m) for m in msgs)}" if field else " ".join(msgs)
        for field, msgs in messages.items()
    ]
    return ("it is not a valid action (" + "; ".join(parts) + ")")[:300]


@dataclass
class _Sync:
    """The sync's running tally (one per call of :func:`connector_apply_mcp_tools`)."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)


def _update(action: ConnectorAction, fields: dict[str, Any], tally: _Sync) -> None:
    """Bring an existing action up to date with its tool (validated before anything is saved)."""
    was_write = action.is_write
    differs = any(getattr(action, k) != v for k, v in fields.items())
    withdraw = action.mcp_read_confirmed_at is not None and any(
        getattr(action, k) != fields[k] for k in _CONFIRMED_FIELDS
    )
    for k, v in fields.items():
        setattr(action, k, v)
    if withdraw:
        action.mcp_read_confirmed_at = None
        action.mcp_read_confirmed_by = None
    if not action.is_write_override and action.derived_is_write() != was_write:
        differs = True
    reactivated = action.removed_by_import_at is not None
    if reactivated:
        action.removed_by_import_at = None
        action.is_active = True
    elif not differs:
        tally.unchanged.append(action.name)
        return
    action.full_clean(validate_unique=False)
    action.save()
    (tally.added if reactivated else tally.changed).append(action.name)
    if withdraw:
        tally.unconfirmed.append(action.name)


@transaction.atomic
def connector_apply_mcp_tools(
    *,
    connector: Connector,
    tools: tuple[types.Tool, ...],
    actor: User | None,
    ip_address: str | None = None,
    rejected: tuple[tuple[str, str], ...] = (),
) -> SyncReport:
    """Store a tool listing as the connector's actions (see the module docstring), with one audit row.

    A tool that cannot become an action (no name, a name too long, an unusable schema, or a listing entry
    the SDK refused: ``rejected``) is skipped with its reason; the others are stored. A confirmed read whose annotations, schema or description changed
    becomes an unconfirmed write again (``unconfirmed``); ``lookalikes`` names tools of the
    organisation's other connectors that this connector's tools resemble.
    """
    existing = list(ConnectorAction.objects.select_for_update().filter(connector=connector))
    by_tool = {a.mcp_tool: a for a in existing if a.mcp_tool}
    taken = {a.name for a in existing}
    tally = _Sync(skipped=[(text_safe(name[:MAX_TOOL_NAME]), reason) for name, reason in rejected])
    seen: set[str] = set()
    for tool in tools:
        label = text_safe((tool.name or "")[:MAX_TOOL_NAME]) or "(no name)"  # the report is stored
        if tool.name in seen:
            tally.skipped.append((label, "listed twice"))
            continue
        seen.add(tool.name)
        problem = _tool_problem(tool)
        if problem:
            tally.skipped.append((label, problem))
            continue
        fields = {
            "description": text_safe(_description(tool)),  # NUL and lone surrogates spelled out
            "parameters": dict(tool.input_schema or {"type": "object"}),
            "mcp_annotations": _annotations(tool),
        }
        action = by_tool.get(tool.name)
        try:
            if action is None:
                name = action_name_for_tool(tool.name)
                if name in taken:
                    tally.skipped.append((label, f"an action named {name!r} already exists"))
                    continue
                action = ConnectorAction(
                    connector=connector,
                    organization_id=connector.organization_id,
                    name=name,
                    mcp_tool=tool.name,
                    source=ActionSource.MCP,
                    **fields,
                )
                action.full_clean(validate_unique=False)
                action.save()
                taken.add(name)
                tally.added.append(name)
            else:
                _update(action, fields, tally)
        except ValidationError as exc:
            tally.skipped.append((label, _validation_reason(exc)))
    removed = actions_retire(existing, source=ActionSource.MCP, still_offered=lambda a: a.mcp_tool in seen)
    report = SyncReport(
        added=tuple(tally.added),
        changed=tuple(tally.changed),
        removed=removed,
        unchanged=tuple(tally.unchanged),
        skipped=tuple(tally.skipped),
        unconfirmed=tuple(tally.unconfirmed),
        lookalikes=tuple(lookalikes_for_connector(connector=connector)),
    )
    import_audit_write(
        connector=connector,
        actor=actor,
        action="connector.mcp_tools_synced",
        report=report,
        ip_address=ip_address,
    )
    return report
