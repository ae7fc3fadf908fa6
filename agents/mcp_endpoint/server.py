"""The MCP server of ``/mcp/orgs/<slug>/``: the SDK's low-level :class:`mcp.server.Server` with a
``tools/list`` and a ``tools/call`` handler. One server serves every organisation: each request carries
its admitted :class:`~agents.mcp_endpoint.caller.Caller` (set by :mod:`agents.mcp_endpoint.http`), and
the handlers answer for that caller's organisation only.

SDK: low-level server handlers ``on_list_tools`` / ``on_call_tool`` taking ``(ctx, params)``, and
``ctx.session.report_progress`` for ``notifications/progress`` (mcp 2.x, ``mcp/server/lowlevel/server.py``
and ``mcp/server/session.py``; https://py.sdk.modelcontextprotocol.io/v2/migration/).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from django.utils import translation
from django.utils.translation import gettext as _
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agents.mcp_endpoint.attachments import request_body_limit
from agents.mcp_endpoint.bridge import AgentAnswered, AgentCallRefused, agent_ask
from agents.mcp_endpoint.caller import CALLER_SCOPE_KEY, Caller
from agents.mcp_endpoint.tools import (
    agent_tool_input_schema,
    agent_tool_named,
    agent_tool_output_schema,
    agent_tools_for_org,
)

SERVER_NAME = "agent-platform-agents"


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller | None:
    """The admitted caller of the HTTP request that carried this MCP request."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    caller = scope.get(CALLER_SCOPE_KEY) if isinstance(scope, dict) else None
    return caller if isinstance(caller, Caller) else None


def _list_tools_sync(caller: Caller) -> list[types.Tool]:
    with translation.override(caller.language):
        input_schema = agent_tool_input_schema()
        output_schema = agent_tool_output_schema()
        return [
            types.Tool(
                name=tool.name,
                title=tool.agent_name,
                description=tool.description,
                input_schema=input_schema,
                output_schema=output_schema,
            )
            for tool in agent_tools_for_org(organization_id=caller.organization_id)
        ]


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = caller_of(ctx)
    tools = [] if caller is None else await database_sync_to_async(_list_tools_sync)(caller)
    return types.ListToolsResult(tools=tools)


def _error(message: str, code: str = "") -> types.CallToolResult:
    """A tool execution error (``isError``); a refusal's code rides in the result's ``_meta``, as
    ``{"code": ...}``: structured content would have to match the tool's output schema."""
    return types.CallToolResult(
        content=[types.TextContent(text=message)], is_error=True, _meta={"code": code} if code else None
    )


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    caller = caller_of(ctx)
    if caller is None:
        return _error("Not authenticated.")
    tool = await database_sync_to_async(agent_tool_named)(
        organization_id=caller.organization_id, name=params.name
    )
    arguments = params.arguments or {}
    with translation.override(caller.language):
        if tool is None:
            return _error(_("There is no agent tool named %(name)s here.") % {"name": params.name})
        question = arguments.get("question")
        conversation_id = arguments.get("conversation_id")
        if conversation_id is not None and not isinstance(conversation_id, str):
            return _error(_("conversation_id must be a string."))
    steps = 0

    async def report(line: str) -> None:
        nonlocal steps
        steps += 1
        await ctx.session.report_progress(steps, None, line)

    outcome = await agent_ask(
        caller=caller,
        tool=tool,
        question=question,
        conversation_id=conversation_id,
        report=report,
        attachments=arguments.get("attachments"),
    )
    match outcome:
        case AgentCallRefused(code=code, message=message):
            return _error(message, code)
        case AgentAnswered() as answered:
            structured = {
                "answer": answered.answer,
                "conversation_id": str(answered.conversation_id),
                "run_id": str(answered.run_id),
                "status": answered.status,
                "citations": list(answered.citations),
            }
            if answered.status == "done":
                return types.CallToolResult(
                    content=[types.TextContent(text=answered.answer)], structured_content=structured
                )
            with translation.override(caller.language):
                text = answered.error or (
                    _("The agent's answer was cancelled.")
                    if answered.status == "cancelled"
                    else _("The agent could not answer.")
                )
            return types.CallToolResult(
                content=[types.TextContent(text=text)], structured_content=structured, is_error=True
            )


def agents_mcp_server() -> Server[Any]:
    """The low-level MCP server of the agents endpoint (one per process)."""
    return Server(SERVER_NAME, title="Agent platform", on_list_tools=list_tools, on_call_tool=call_tool)


def agents_session_manager(server: Server[Any]) -> StreamableHTTPSessionManager:
    """The endpoint's session manager: the SDK's, reading request bodies up to the size that one
    message's files take base64-encoded (the SDK's own cap, 4 MiB, would refuse them with 413)."""
    return StreamableHTTPSessionManager(app=server, max_request_body_size=request_body_limit())
