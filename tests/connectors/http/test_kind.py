"""The HTTP kind (connectors.http.kind): what its actions need, whether they write, and what their tools
say and allow."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.engine.run_context import RunContext
from connectors.models import ConnectorAction
from connectors.tools import ConnectorTool, tool_description_for
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db


def test_an_http_tool_says_its_method_and_path_and_retries_only_reads(org):
    crm = ConnectorFactory(
        organization=org, name="crm", description="The CRM.", connect_timeout=2.0, read_timeout=10.0
    )
    search = ConnectorActionFactory(
        connector=crm, name="list_customers", description="", method="GET", path_template="/customers"
    )
    add = ConnectorActionFactory(
        connector=crm,
        name="add_customer",
        description="Add a customer.\nGive the customer's name.",
        method="POST",
        path_template="/customers",
    )

    assert tool_description_for(search) == (
        "List customers (crm: GET /customers)\nSystem: The CRM.\nRead-only: it does not change data."
    )
    assert tool_description_for(add) == (
        "Add a customer. (crm: POST /customers)\nGive the customer's name.\nSystem: The CRM.\n"
        "This action CHANGES data in the system."
    )
    context = RunContext(org_id=org.pk)
    assert ConnectorTool(search, context).timeout == (2.0 + 10.0) * 3 + 5  # reads are retried
    assert ConnectorTool(add, context).timeout == (2.0 + 10.0) + 5


@pytest.mark.parametrize(
    ("method", "is_write"),
    [("GET", False), ("HEAD", False), ("POST", True), ("put", True), ("PATCH", True), ("DELETE", True)],
)
def test_an_http_action_writes_by_its_method(org, method, is_write):
    action = ConnectorActionFactory(connector__organization=org, method=method)
    assert action.is_write is is_write


def test_an_http_action_needs_a_method_and_a_path_and_has_no_sql(org):
    crm = ConnectorFactory(organization=org, name="crm")
    action = ConnectorAction(connector=crm, name="broken", method="", path_template="orders", free_form=True)
    with pytest.raises(ValidationError) as raised:
        action.full_clean()
    assert raised.value.message_dict["method"] == ["An HTTP action needs a method."]
    assert raised.value.message_dict["path_template"] == ["The path must start with '/'."]
    assert raised.value.message_dict["sql_template"] == ["HTTP actions have no SQL."]
