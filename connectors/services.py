"""Write services of the connectors app. Each is one transaction with its own audit row.

Secrets never enter audit rows: they are recorded as set, unchanged or cleared.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction

from agents.engine.run_context import RunContext
from agents.engine.strict_json import json_safe, text_safe
from connectors.action_imports import ImportReport, actions_retire, import_audit_write
from connectors.adapter_types import ConnectionFailed, ConnectionTestResult
from connectors.configs import connector_secret_values
from connectors.http.openapi import ImportedAction, OpenAPIError, parse_openapi
from connectors.kinds import ConnectorKindAdapter, adapter_for
from connectors.mcp.client import McpFailure
from connectors.mcp.config import StdioNotAllowed
from connectors.mcp.sync import SyncReport, connector_apply_mcp_tools, mcp_tools_list
from connectors.models import (
    ActionSource,
    CallStatus,
    Connector,
    ConnectorAction,
    ConnectorCallLog,
    ConnectorKind,
)
from connectors.redaction import redact
from connectors.scrub import scrub
from platform_core.audit.audited import audited_delete, audited_save
from platform_core.crypto import SecretDecryptError

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

_IMPORTED_FIELDS = ("description", "method", "path_template", "parameters", "param_locations")
MAX_ERROR_CHARS = 2_000
MAX_RETRIEVED_LOGGED = 20  # a search's hits kept on its call-log row (ids, names and scores, no text)


def connector_save(
    *,
    connector: Connector,
    actor: User | None,
    secrets: Mapping[str, str | None] | None = None,
    ip_address: str | None = None,
) -> Connector:
    """Validate and save a new or changed connector and audit it (``platform_core.audit.audited``).

    ``secrets`` maps ``auth_secret``/``dsn`` to a new value; ``""`` or ``None`` clears it; a missing key
    keeps the stored value. The audit row says only whether a secret is set and that it changed.
    """
    audited_save(instance=connector, actor=actor, secrets=secrets, ip_address=ip_address)
    adapter_for(connector.kind).connector_saved(connector)
    return connector


def connector_delete(*, connector: Connector, actor: User | None, ip_address: str | None = None) -> None:
    """Delete a connector and its actions; its call logs stay (without the link)."""
    audited_delete(instance=connector, actor=actor, ip_address=ip_address)


@transaction.atomic
def connector_import_openapi(
    *,
    connector: Connector,
    document_text: str,
    actor: User | None,
    ip_address: str | None = None,
) -> ImportReport:
    """Import (or re-import) an OpenAPI 3 document into the connector's actions, in place.

    New operations are added; operations whose method, path, description or schema changed are updated
    (an admin's ``is_write`` override and active flag are kept); imported actions missing from the new
    document are *deactivated*, not deleted, so their call logs keep their link and an admin's edits
    survive if the operation comes back (it is then reactivated and reported as added). Actions created
    by hand are never touched unless the document has an operation of the same name.
    Raises :class:`~connectors.http.openapi.OpenAPIError` for an unusable document (nothing is changed).
    """
    if connector.kind != "http":
        raise OpenAPIError("OpenAPI documents can only be imported into HTTP connectors")
    parsed = parse_openapi(document_text)
    existing = {a.name: a for a in ConnectorAction.objects.select_for_update().filter(connector=connector)}
    added: list[str] = []
    changed: list[str] = []
    unchanged: list[str] = []
    for spec in parsed.actions:
        action = existing.get(spec.name)
        if action is None:
            _imported_action_create(connector, spec)
            added.append(spec.name)
            continue
        differs = _apply_imported(action, spec)
        if action.removed_by_import_at is not None:
            action.removed_by_import_at = None
            action.is_active = True
            added.append(spec.name)
        elif differs:
            changed.append(spec.name)
        else:
            unchanged.append(spec.name)
        if differs or spec.name in added or action.source != ActionSource.OPENAPI:
            action.source = ActionSource.OPENAPI
            action.full_clean(validate_unique=False)
            action.save()
    imported = {spec.name for spec in parsed.actions}
    removed = actions_retire(
        existing.values(), source=ActionSource.OPENAPI, still_offered=lambda a: a.name in imported
    )
    if not connector.base_url and parsed.server_url:
        connector.base_url = parsed.server_url
        connector.save(update_fields=["base_url", "updated_at"])
    report = ImportReport(
        added=tuple(added),
        changed=tuple(changed),
        removed=removed,
        unchanged=tuple(unchanged),
        skipped=parsed.skipped,
    )
    import_audit_write(
        connector=connector,
        actor=actor,
        action="connector.openapi_imported",
        report=report,
        ip_address=ip_address,
    )
    return report


def _imported_action_create(connector: Connector, spec: ImportedAction) -> ConnectorAction:
    action = ConnectorAction(
        connector=connector,
        organization_id=connector.organization_id,
        name=spec.name,
        source=ActionSource.OPENAPI,
    )
    _apply_imported(action, spec)
    action.full_clean(validate_unique=False)
    action.save()
    return action


def _apply_imported(action: ConnectorAction, spec: ImportedAction) -> bool:
    """Copy the document's view of the operation onto the action; True if anything changed."""
    differs = False
    for name in _IMPORTED_FIELDS:
        value = getattr(spec, name)
        if getattr(action, name) != value:
            setattr(action, name, value)
            differs = True
    if action.sql_template or action.free_form:
        action.sql_template, action.free_form = "", False
        differs = True
    if not action.is_write_override and action.is_write != spec.is_write:
        differs = True
    return differs


@transaction.atomic
def connector_create_with_openapi(
    *,
    connector: Connector,
    actor: User | None,
    secrets: Mapping[str, str | None] | None = None,
    document_text: str,
    ip_address: str | None = None,
) -> tuple[Connector, ImportReport]:
    """Create a connector and import its actions from an OpenAPI document, all or nothing.

    Without a base URL the document's first absolute server URL is used.
    """
    if not connector.base_url:
        parsed = parse_openapi(document_text)
        connector.base_url = parsed.server_url
    connector = connector_save(connector=connector, actor=actor, secrets=secrets, ip_address=ip_address)
    report = connector_import_openapi(
        connector=connector, document_text=document_text, actor=actor, ip_address=ip_address
    )
    return connector, report


def connector_create_mcp(
    *,
    connector: Connector,
    actor: User | None,
    secrets: Mapping[str, str | None] | None = None,
    ip_address: str | None = None,
) -> tuple[Connector, SyncReport | McpFailure | None]:
    """Create an MCP connector with its tools, all or nothing.

    The connector is validated (the SSRF guard included) and its server asked for its tools *before*
    anything is stored, outside any transaction; then the connector and its tools are saved in one
    transaction, so a create that fails leaves nothing. A server that cannot be reached does not stop
    the create (the answer says why, and "Sync tools" can run later); a bad tool is skipped with its
    reason. An inactive connector is stored without asking its server (``None``).
    """
    for name, value in (secrets or {}).items():
        setattr(connector, name, value or "")
    connector.full_clean()
    listing = mcp_tools_list(connector=connector) if connector.is_active else None
    with transaction.atomic():
        connector_save(connector=connector, actor=actor, secrets=secrets, ip_address=ip_address)
        if listing is None or isinstance(listing, McpFailure):
            return connector, listing
        report = connector_apply_mcp_tools(
            connector=connector,
            tools=listing.tools,
            actor=actor,
            ip_address=ip_address,
            rejected=listing.rejected,
        )
    return connector, report


def action_save(
    *, action: ConnectorAction, actor: User | None, ip_address: str | None = None
) -> ConnectorAction:
    """Validate and save a new or changed action and audit it."""
    action.organization_id = action.connector.organization_id
    audited_save(instance=action, actor=actor, ip_address=ip_address)
    return action


def action_delete(*, action: ConnectorAction, actor: User | None, ip_address: str | None = None) -> None:
    audited_delete(instance=action, actor=actor, ip_address=ip_address)


def call_log_arguments(kind: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a call log row of ``kind`` keeps: its private ones (a memory's text) replaced by
    their length."""
    private = adapter_for(kind).private_arguments if kind in ConnectorKind.values else frozenset()
    return {
        key: (f"({len(str(value))} characters, not kept)" if key in private else value)
        for key, value in arguments.items()
    }


def call_log_record(
    *,
    context: RunContext,
    tool_name: str,
    arguments: Mapping[str, Any],
    status: str,
    connector_id: Any = None,
    action_id: Any = None,
    is_write: bool = False,
    tool_call_id: str = "",
    http_status: int | None = None,
    row_count: int | None = None,
    latency_ms: float = 0.0,
    request_bytes: int = 0,
    response_bytes: int = 0,
    error: str = "",
    approval_ref: str = "",
    secrets: tuple[str, ...] = (),
    mcp_method: str = "",
    retrieved: Sequence[Mapping[str, Any]] = (),
) -> ConnectorCallLog:
    """Write the one call-log row of a connector call (made in the run ``context`` says), with arguments
    and error redacted; ``retrieved`` (a search's hits) is kept to :data:`MAX_RETRIEVED_LOGGED` entries."""
    if status not in CallStatus.values:
        raise ValueError(f"unknown call status {status!r}")
    if context.org_id is None:
        raise ValueError("a call log belongs to an organisation; the run context has none")
    return ConnectorCallLog.objects.create(
        organization_id=context.org_id,
        user_id=context.user_id,
        agent_id=str(context.agent_id or ""),
        conversation_id=str(context.conversation_id or ""),
        run_id=str(context.run_id or ""),
        tool_call_id=tool_call_id[:128],
        connector_id=connector_id,
        action_id=action_id,
        tool_name=tool_name[:64],
        arguments=redact(dict(arguments), secrets),
        status=status,
        is_write=is_write,
        http_status=http_status,
        row_count=row_count,
        latency_ms=round(latency_ms, 3),
        request_bytes=max(0, int(request_bytes)),
        response_bytes=max(0, int(response_bytes)),
        error=text_safe(scrub(error, secrets))[:MAX_ERROR_CHARS],
        approval_ref=approval_ref,
        mcp_method=mcp_method,
        retrieved=retrieved_for_log(retrieved),
    )


def retrieved_for_log(retrieved: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A search's hits as a call-log row keeps them: the first :data:`MAX_RETRIEVED_LOGGED`, as plain
    JSON values."""
    return [json_safe(dict(hit)) for hit in retrieved[:MAX_RETRIEVED_LOGGED]]


async def connector_test_connection_async(*, organization_id: int, connector_id: Any) -> ConnectionTestResult:
    """Check that a connector's system answers (SSRF-checked, with its credentials); changes nothing."""
    loaded = await sync_to_async(_test_config)(organization_id, connector_id)
    if not isinstance(loaded, tuple):
        return loaded
    adapter, config, secrets = loaded
    return await adapter.test_connection(config, secrets)


def connector_test_connection(*, connector: Connector) -> ConnectionTestResult:
    """:func:`connector_test_connection_async` for synchronous callers (the admin)."""
    return async_to_sync(connector_test_connection_async)(
        organization_id=connector.organization_id, connector_id=connector.pk
    )


def _test_config(
    organization_id: int, connector_id: Any
) -> tuple[ConnectorKindAdapter, Any, tuple[str, ...]] | ConnectionTestResult:
    """The connector's kind, its config and its secrets (decrypted), or why the test cannot run."""
    connector = Connector.objects.filter(pk=connector_id, organization_id=organization_id).first()
    if connector is None:
        return ConnectionFailed(reason="no such connector")
    adapter = adapter_for(connector.kind)
    try:
        return adapter, adapter.call_config(connector), connector_secret_values(connector)
    except SecretDecryptError:
        return ConnectionFailed(reason="the stored credentials cannot be decrypted; enter them again")
    except StdioNotAllowed:
        return ConnectionFailed(
            reason="the operator does not allow this local MCP command (MCP_STDIO_ALLOWED_COMMANDS)"
        )
