"""The SQL database kind (connectors.sql.kind): what its actions need, whether they write, and what their
tools say and allow."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.engine.run_context import RunContext
from connectors.models import ConnectorAction
from connectors.tools import ConnectorTool, tool_description_for
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db


def _ledger(org, **extra):
    return ConnectorFactory(
        organization=org, name="ledger", kind="database", base_url="", engine="mariadb", **extra
    )


def _sql(connector, **extra):
    return ConnectorActionFactory(connector=connector, method="", path_template="", **extra)


def test_a_sql_tool_says_sql_and_a_free_form_one_its_dialect_and_row_cap(org):
    ledger = _ledger(
        org, description="The books.", max_rows=50, connect_timeout=3.0, statement_timeout_ms=2_500
    )
    totals = _sql(ledger, name="month_totals", description="", sql_template="SELECT sum(amount) FROM entries")
    ask = _sql(ledger, name="ask", description="", free_form=True)
    described = _sql(ledger, name="ask_more", description="Ask the books.\nAny read.", free_form=True)

    assert tool_description_for(totals) == (
        "Month totals (ledger: SQL)\nSystem: The books.\nRead-only: it does not change data."
    )
    assert tool_description_for(ask) == (
        "Run one read-only SQL query on the ledger database (ledger: free-form read-only SQL)\n"
        "System: The books.\n"
        "Only one plain read statement in MariaDB's SQL is accepted; at most 50 rows are returned.\n"
        "Read-only: it does not change data."
    )
    assert tool_description_for(described).splitlines()[:2] == [
        "Ask the books. (ledger: free-form read-only SQL)",
        "Any read.",
    ]
    assert ConnectorTool(totals, RunContext(org_id=org.pk)).timeout == 3.0 + 2.5 + 5


def test_a_sql_action_writes_by_its_template_and_free_form_sql_and_schema_tools_never_do(org):
    ledger = _ledger(org)
    assert _sql(ledger, sql_template="INSERT INTO entries (note) VALUES ('x')").is_write is True
    assert _sql(ledger, sql_template="SELECT note FROM entries").is_write is False
    assert _sql(ledger, free_form=True).is_write is False
    assert _sql(ledger, name="list_tables", schema_tool="list_tables").is_write is False


def test_a_sql_action_needs_a_template_or_free_form_sql_and_no_http_method(org):
    ledger = _ledger(org)
    action = ConnectorAction(connector=ledger, name="broken", method="GET", path_template="/rows")
    with pytest.raises(ValidationError) as raised:
        action.full_clean()
    assert raised.value.message_dict["method"] == ["Database actions have no HTTP method or path."]
    assert raised.value.message_dict["sql_template"] == [
        "Give an SQL template or allow free-form read-only SQL."
    ]
    both = ConnectorAction(connector=ledger, name="both", free_form=True, sql_template="SELECT 1")
    with pytest.raises(ValidationError) as raised:
        both.full_clean()
    assert raised.value.message_dict["sql_template"] == [
        "A free-form action has no SQL template; the agent writes the query."
    ]
