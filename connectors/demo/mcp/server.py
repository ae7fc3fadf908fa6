"""The demo MCP server: the SDK's low-level :class:`mcp.server.Server` with the two demo tools.

SDK: ``Server(name, on_list_tools=..., on_call_tool=...)`` with ``(ctx, params)`` handlers, tool
annotations ``readOnlyHint`` / ``destructiveHint`` (mcp 2.x ``mcp/server/lowlevel/server.py``;
https://modelcontextprotocol.io/specification/2025-06-18/server/tools).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from mcp.server import Server, ServerRequestContext

from connectors.demo.mcp.tools import DemoToolError, purchase_orders_find, purchase_request_create

SERVER_NAME = "demo-erp"
FIND_TOOL = "find_purchase_orders"
CREATE_TOOL = "create_purchase_request"

TOOLS = [
    types.Tool(
        name=FIND_TOOL,
        title="Find purchase orders",
        description="Look up purchase orders of the demo ERP by number (PO-0001), supplier or status.",
        input_schema={
            "type": "object",
            "properties": {
                "number": {"type": "string", "description": "A purchase order number, e.g. PO-0001"},
                "supplier": {"type": "string", "description": "Part of the supplier's name"},
                "status": {"type": "string", "enum": ["draft", "approved", "paid"]},
            },
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name=CREATE_TOOL,
        title="Create a purchase request",
        description="Create a purchase request (a draft purchase order) for a supplier in the demo ERP.",
        input_schema={
            "type": "object",
            "properties": {
                "supplier": {"type": "string", "description": "The supplier's name"},
                "description": {"type": "string", "description": "What is bought"},
                "amount": {"type": "number", "description": "The amount, in CNY"},
            },
            "required": ["supplier", "amount"],
        },
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def _text(value: Any, *, error: bool = False) -> types.CallToolResult:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments = params.arguments or {}
    try:
        if params.name == FIND_TOOL:
            found = await database_sync_to_async(purchase_orders_find)(
                number=str(arguments.get("number") or ""),
                supplier=str(arguments.get("supplier") or ""),
                status=str(arguments.get("status") or ""),
            )
            return _text(found)
        if params.name == CREATE_TOOL:
            created = await database_sync_to_async(purchase_request_create)(
                supplier=arguments.get("supplier"),
                description=arguments.get("description"),
                amount=arguments.get("amount"),
            )
            return _text(created)
    except DemoToolError as refused:
        return _text(str(refused), error=True)
    return _text(f"unknown tool {params.name!r}", error=True)


def demo_mcp_server() -> Server[Any]:
    """The demo MCP server (one per process)."""
    return Server(SERVER_NAME, title="Demo ERP", on_list_tools=list_tools, on_call_tool=call_tool)
