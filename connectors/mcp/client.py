"""``tools/list`` and ``tools/call`` on an MCP server, as typed outcomes.

Calls use the loop's pooled session (:mod:`connectors.mcp.pool`). When the server has forgotten the
session (it restarted, expired it, or answers "Session not found"), the session is re-initialised and the
call sent once more: the server refused it, so it did not run. A connection that broke while a *write*
was in flight is not retried (it may have run); a read is. Every call is bounded by the connector's read
timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

from agents.engine.tools import Artifact
from connectors.adapter_types import CallOutcome
from connectors.http.auth import secrets_of
from connectors.mcp.config import McpConfig
from connectors.mcp.pool import PooledSession, SessionOpenError, session_pool
from connectors.mcp.results import error_text, render_result
from connectors.mcp.transport import TOO_LARGE
from connectors.scrub import scrub

logger = logging.getLogger(__name__)

METHOD_CALL = "tools/call"
METHOD_LIST = "tools/list"
MAX_TOOL_PAGES = 50
_SESSION_GONE = ("session not found", "session terminated", "session expired")


@dataclass(frozen=True, slots=True)
class McpCallResult:
    """A call's outcome (status, content, sizes, latency) and the artifacts for the tool card."""

    outcome: CallOutcome
    artifacts: tuple[Artifact, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolListing:
    """The server's tools, and the entries of its listing that are not valid tools (name, reason)."""

    tools: tuple[types.Tool, ...] = field(default_factory=tuple)
    rejected: tuple[tuple[str, str], ...] = field(default_factory=tuple)


class _RawToolPage(types.PaginatedResult):
    """A ``tools/list`` page whose tools are checked one by one (one bad tool must not void the rest)."""

    tools: list[Any] = []


async def _tool_page(session: Any, params: types.PaginatedRequestParams | None) -> _RawToolPage:
    """One ``tools/list`` page, unvalidated. The SDK's ``list_tools`` validates the whole page and
    refuses it for one malformed tool; its dispatcher's raw request (SDK 2.x, ``ClientSession.
    send_request`` minus that check) lets each tool be judged alone. Without it, the SDK's way."""
    dispatcher = getattr(session, "_dispatcher", None)
    stamp = getattr(session, "_stamp", None)
    if dispatcher is None or stamp is None or not hasattr(dispatcher, "send_raw_request"):
        listed = await session.list_tools(params=params)
        return _RawToolPage(tools=list(listed.tools), next_cursor=listed.next_cursor)
    data = types.ListToolsRequest(params=params).model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    stamp(data, opts)
    raw = await dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    return _RawToolPage.model_validate(raw if isinstance(raw, dict) else {})


def _tool_or_reason(raw: Any) -> types.Tool | tuple[str, str]:
    if isinstance(raw, types.Tool):
        return raw
    try:
        return types.Tool.model_validate(raw)
    except ValidationError as exc:
        name = raw.get("name") if isinstance(raw, dict) else None
        errors = exc.errors()
        where = ".".join(str(part) for part in errors[0]["loc"]) if errors else ""
        message = str(errors[0]["msg"]) if errors else "invalid"
        detail = f"{where}: {message}" if where else message
        label = name if isinstance(name, str) and name else "(no name)"
        return label, f"the server's description of the tool is not valid ({detail})"[:300]


@dataclass(frozen=True, slots=True)
class McpFailure:
    """Why talking to the server failed (short, secret-free). ``configuration`` is true when the
    connector's own settings stopped it before any server was asked (a 400, not a 502, for the API)."""

    error: str
    configuration: bool = False


def _session_gone(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return any(s in exc.message.lower() for s in _SESSION_GONE)
    return False


def _connection_broken(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, ConnectionError | EOFError) or type(exc).__name__ in (
        "ClosedResourceError",
        "BrokenResourceError",
        "EndOfStream",
    )


def _too_large(exc: BaseException) -> bool:
    """The answer passed the connector's limit (our bridge's or the SDK's per-event limit): the client
    stopped reading it, so calling again would only read as much again."""
    if isinstance(exc, MCPError):
        return TOO_LARGE in exc.message or "byte limit" in exc.message
    return False


def _describe(exc: BaseException, config: McpConfig | None = None) -> str:
    if config is not None and _too_large(exc):
        return (
            f"the MCP server's answer was larger than {config.max_answer_bytes} bytes (twice this "
            "connector's maximum response size, plus 64 kB); it was not read further"
        )
    if isinstance(exc, MCPError):
        return f"the MCP server answered with an error: {exc.message}"[:300]
    if isinstance(exc, SessionOpenError):
        return str(exc)
    return f"the MCP call failed ({type(exc).__name__})"


async def _with_session(
    config: McpConfig, work: Any, *, retry_broken: bool, pooled: PooledSession | None
) -> Any:
    """Run ``work(session)`` on a pooled session (or the given one), re-opening it once if it is gone."""
    pool = session_pool()
    attempts = 2
    for attempt in range(attempts):
        current = pooled if pooled is not None else await pool.get(config)
        try:
            leased = pool.lease(current) if pooled is None else contextlib.nullcontext(current)
            async with leased, asyncio.timeout(config.read_timeout):
                return await work(current.session)
        except Exception as exc:
            # A forgotten session refused the call (it did not run); a broken connection may have run it.
            again = _session_gone(exc) or (
                retry_broken and not _too_large(exc) and (_connection_broken(exc) or not current.alive)
            )
            if pooled is not None or attempt == attempts - 1 or not again:
                raise
            logger.info("MCP session of connector %s was dropped; opening a new one", config.connector_id)
            await pool.discard(current)
    raise AssertionError("unreachable")


async def mcp_list_tools(
    config: McpConfig, *, pooled: PooledSession | None = None
) -> ToolListing | McpFailure:
    """Every tool of the server (following ``nextCursor``). Each listed tool is validated on its own:
    one the SDK would refuse is returned in ``rejected`` with the reason, not failing the listing.
    (Used by "Sync tools" and "Test connection" on their own sessions: tool calls use the SDK's
    ``list_tools`` state of the pooled session, which this does not touch.)"""

    async def work(session: Any) -> ToolListing:
        tools: list[types.Tool] = []
        rejected: list[tuple[str, str]] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await _tool_page(session, params)
            for raw in page.tools:
                checked = _tool_or_reason(raw)
                if isinstance(checked, types.Tool):
                    tools.append(checked)
                else:
                    rejected.append(checked)
            cursor = page.next_cursor
            if not cursor:
                break
        return ToolListing(tools=tuple(tools), rejected=tuple(rejected))

    try:
        return await _with_session(config, work, retry_broken=True, pooled=pooled)
    except TimeoutError:
        return McpFailure("the MCP server did not answer in time")
    except Exception as exc:
        return McpFailure(_describe(exc, config))


async def mcp_call_tool(
    config: McpConfig, tool: str, arguments: Mapping[str, Any], *, is_write: bool
) -> McpCallResult:
    """Call one tool; an ``isError`` result is an error outcome with the tool's message."""
    started = time.perf_counter()
    request_bytes = len(json.dumps({"name": tool, "arguments": dict(arguments)}, default=str).encode())

    def done(status: str, content: str = "", error: str = "", **extra: Any) -> CallOutcome:
        # The OAuth access token is fetched at run time, so it is not among the connector's stored
        # secrets: a server that echoes it back must not hand it to the model, the chat or the log.
        secrets = secrets_of(config.http_config())
        return CallOutcome(
            status="ok" if status == "ok" else "error",
            content=scrub(content, secrets),
            error=scrub(error, secrets),
            latency_ms=(time.perf_counter() - started) * 1000,
            request_bytes=request_bytes,
            **extra,
        )

    async def work(session: Any) -> types.CallToolResult:
        return await session.call_tool(tool, dict(arguments), read_timeout_seconds=config.read_timeout)

    try:
        result = await _with_session(config, work, retry_broken=not is_write, pooled=None)
    except TimeoutError:
        return McpCallResult(
            done("error", error=f"the MCP server did not answer within {config.read_timeout:g} s")
        )
    except Exception as exc:
        read = config.max_answer_bytes if _too_large(exc) else 0
        return McpCallResult(done("error", error=_describe(exc, config), response_bytes=read))
    rendered = render_result(result, max_bytes=config.max_response_bytes)
    if rendered.is_error:
        return McpCallResult(
            done("error", error=error_text(rendered), response_bytes=rendered.size_bytes), rendered.artifacts
        )
    return McpCallResult(
        done("ok", content=rendered.text, response_bytes=rendered.size_bytes, truncated=rendered.truncated),
        rendered.artifacts,
    )
