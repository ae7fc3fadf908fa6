"""What the guard rails know about a run's connector tools: tool name -> action facts.

Built once per run (one query) from the same actions the connector tools are built from, so every hook
can tell, from a tool name alone, which connector and action a call targets and whether it writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from connectors.kinds import adapter_for
from connectors.models import ConnectorAction
from connectors.selectors import actions_for_tools
from connectors.tools import tool_name_for


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """One connector action as a tool: where it goes and whether it may change data."""

    tool_name: str
    action_id: uuid.UUID
    action_name: str
    connector_id: uuid.UUID
    connector_name: str
    kind: str
    is_write: bool
    free_form: bool = False
    sql_template: str = ""
    engine: str = "postgresql"  # a database connector's engine: the SQL guard's dialect
    schema_tool: str = ""  # list_tables / describe_table: reads the catalogue, never writes
    method: str = ""
    description: str = ""
    mcp_read_confirmed: bool = False  # an MCP tool is a read only once an admin confirmed it

    @classmethod
    def from_action(cls, action: ConnectorAction) -> ActionInfo:
        connector = action.connector
        return cls(
            tool_name=tool_name_for(connector.name, action.name),
            action_id=action.pk,
            action_name=action.name,
            connector_id=connector.pk,
            connector_name=connector.name,
            kind=connector.kind,
            is_write=action.is_write,
            free_form=action.free_form,
            sql_template=action.sql_template,
            engine=connector.engine,
            schema_tool=action.schema_tool,
            method=action.method,
            description=(action.description or "").strip().splitlines()[0] if action.description else "",
            mcp_read_confirmed=action.mcp_read_confirmed_at is not None,
        )

    def write_reason(self, arguments: Mapping[str, Any]) -> str | None:
        """Why this call could change data, or ``None`` when it is certainly a read: the connector's kind
        judges (:meth:`connectors.kinds.ConnectorKindAdapter.call_write_reason`)."""
        return adapter_for(self.kind).call_write_reason(self, arguments)


class ActionCatalog:
    """The run's connector tools by name."""

    def __init__(self, infos: Iterable[ActionInfo] = ()) -> None:
        self._by_name = {info.tool_name: info for info in infos}

    def get(self, tool_name: str) -> ActionInfo | None:
        return self._by_name.get(tool_name)

    def __iter__(self) -> Iterator[ActionInfo]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


def action_catalog_for(*, organization_id: int, connector_ids: Iterable[Any]) -> ActionCatalog:
    """The catalogue of one run (sync: one query)."""
    actions = actions_for_tools(organization_id=organization_id, connector_ids=connector_ids)
    return ActionCatalog(ActionInfo.from_action(a) for a in actions)
