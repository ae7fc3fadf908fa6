"""The schema tools as a database connector's actions: made once per connector, never writes for the
guard rails, and the connector's allow list is validated when saved."""

from __future__ import annotations

import time

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.urls import reverse

from connectors import db_schema
from connectors.adapter_types import CallOutcome
from connectors.configs import database_config_for, sql_action_spec_for
from connectors.models import Connector, ConnectorAction, ensure_schema_tools
from connectors.services import connector_save
from hooks.catalog import ActionInfo
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db


def database(**fields: object):
    values = {
        "kind": "database",
        "base_url": "",
        "dsn": "postgresql://reader:pw-123456789@db.example.com/erp",
    }
    values.update(fields)
    return ConnectorFactory(**values)


def test_a_database_connector_gets_list_tables_and_describe_table_once() -> None:
    connector = database()

    ensure_schema_tools(connector)
    ensure_schema_tools(connector)

    actions = ConnectorAction.objects.unscoped().filter(connector=connector).order_by("name")
    assert [(a.name, a.schema_tool, a.is_write) for a in actions] == [
        ("describe_table", "describe_table", False),
        ("list_tables", "list_tables", False),
    ]
    describe = actions[0]
    describe.full_clean()
    assert describe.parameters["required"] == ["table"]
    assert sql_action_spec_for(describe).schema_tool == "describe_table"


def test_an_action_the_admin_named_list_tables_is_left_alone() -> None:
    connector = database()
    own = ConnectorActionFactory(
        connector=connector, name="list_tables", method="", path_template="", sql_template="SELECT 1"
    )

    ensure_schema_tools(connector)

    own.refresh_from_db()
    assert own.schema_tool == "" and own.sql_template == "SELECT 1"
    assert ConnectorAction.objects.unscoped().filter(connector=connector).count() == 2


def test_schema_tools_are_reads_for_read_only_mode() -> None:
    connector = database()
    ensure_schema_tools(connector)

    infos = [
        ActionInfo.from_action(a) for a in ConnectorAction.objects.unscoped().filter(connector=connector)
    ]

    assert [info.write_reason({"table": "x"}) for info in infos] == [None, None]


def test_the_allow_list_reaches_the_adapter_and_bad_entries_are_refused() -> None:
    connector = database(
        schema_allow_list=["sales", "hr.people"], schema_samples=True, schema_cache_seconds=60
    )
    connector.full_clean()
    config = database_config_for(connector)
    assert (config.allowed_tables, config.schema_samples, config.schema_cache_seconds) == (
        ("sales", "hr.people"),
        True,
        60,
    )

    connector.schema_allow_list = ["a.b.c", "with space"]
    with pytest.raises(ValidationError) as raised:
        connector.full_clean()
    assert "schema_allow_list" in raised.value.message_dict


def test_saving_a_database_connector_through_the_service_gives_it_the_schema_tools(org) -> None:
    connector = Connector(
        organization=org,
        name="ledger",
        kind="database",
        engine="mariadb",
        dsn="mysql://reader:pw-123456789@db.example.com:3306/ledger",
        schema_allow_list=["ledger.entries"],
    )

    connector_save(connector=connector, actor=None)
    connector_save(connector=connector, actor=None)  # saved again: still one of each

    names = sorted(
        ConnectorAction.objects.unscoped().filter(connector=connector).values_list("name", flat=True)
    )
    assert names == ["describe_table", "list_tables"]


def test_an_http_connector_gets_no_schema_tools(org) -> None:
    connector = Connector(organization=org, name="erp", kind="http", base_url="https://erp.example.com/api")

    connector_save(connector=connector, actor=None)

    assert not ConnectorAction.objects.unscoped().filter(connector=connector).exists()


def test_refresh_schema_in_the_admin_forgets_the_cached_answers(admin_client, org) -> None:
    connector = database(organization=org, name="ledger")
    key = (str(connector.pk), "settings", "list_tables", "", "")
    db_schema._cache[key] = db_schema._Entry(time.monotonic() + 600, CallOutcome(status="ok", content="old"))

    response = admin_client.post(
        reverse("admin:connectors_connector_changelist"),
        {"action": "refresh_schema", ACTION_CHECKBOX_NAME: [str(connector.pk)]},
        follow=True,
    )

    assert "ledger: the tables and their descriptions will be read anew." in response.content.decode()
    assert key not in db_schema._cache
    assert ConnectorAction.objects.unscoped().filter(connector=connector, schema_tool="list_tables").exists()


def test_the_api_creates_a_mysql_connector_with_its_allow_list_and_schema_tools(
    client_for, org_admin, org
) -> None:
    body = {
        "name": "shop",
        "kind": "database",
        "engine": "mariadb",
        "dsn": "mariadb://reader:pw-123456789@db.example.com:3306/shop",
        "schema_allow_list": ["shop.orders", "shop.customers"],
        "schema_samples": True,
        "schema_cache_seconds": 30,
    }

    response = client_for(org_admin).post(f"/api/v1/orgs/{org.slug}/connectors/", body, format="json")

    assert response.status_code == 201, response.content
    data = response.json()
    assert (
        data["engine"],
        data["schema_allow_list"],
        data["schema_samples"],
        data["schema_cache_seconds"],
    ) == (
        "mariadb",
        ["shop.orders", "shop.customers"],
        True,
        30,
    )
    assert "pw-123456789" not in response.content.decode()
    names = sorted(
        ConnectorAction.objects.unscoped().filter(connector_id=data["id"]).values_list("name", flat=True)
    )
    assert names == ["describe_table", "list_tables"]
