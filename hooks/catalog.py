"""What the guard rails know about a run's connector tools: tool name -> action facts.

Built once per run (one query) from the same actions the connector tools are built from, so every hook
can tell, from a tool name alone, which connector and action a call targets and whether it writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from connectors.models import ConnectorAction, ConnectorKind
from connectors.selectors import actions_for_tools
from connectors.sql.guard import classify_sql, is_write_sql
from connectors.tools import tool_name_for

FREE_FORM_SQL_ARGUMENT = "sql"


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
        """Why this call could change data, or ``None`` when it is certainly a read.

        HTTP actions follow ``is_write`` (an admin may declare a POST search a read); an MCP tool is a
        read only when it is not a write and an admin confirmed it as one. SQL is judged from
        the SQL itself whatever the flag says: a template, or the free-form statement in the arguments,
        must be one plain read statement.
        """
        if self.kind == ConnectorKind.DATABASE:
            if self.schema_tool:
                return None
            if self.free_form:
                sql = arguments.get(FREE_FORM_SQL_ARGUMENT)
                verdict = classify_sql(sql if isinstance(sql, str) else "", engine=self.engine)
                return None if verdict.is_single_read else verdict.reason
            if self.is_write or is_write_sql(self.sql_template, engine=self.engine):
                return "the SQL of this action changes data"
            return None
        if self.kind == ConnectorKind.MCP and not self.is_write and not self.mcp_read_confirmed:
            # The server's annotations alone never make a tool a read (connectors.mcp.trust).
            return "no admin has confirmed this MCP tool as a read"
        return "this action writes data" if self.is_write else None


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
