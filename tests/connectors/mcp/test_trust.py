"""Issue #31: an MCP server's annotations are untrusted hints. Every tool is stored as a write whatever
it claims; only an admin's confirmation (audited, in the admin and the API) makes it a read; annotations
that contradict each other keep it a write; a re-sync that changes what was confirmed withdraws it."""

from __future__ import annotations

import itertools
from importlib import import_module

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.urls import reverse
from mcp import types

from connectors.mcp.confirm import ConfirmRefused, ReadConfirmed, mcp_action_confirm_read
from connectors.mcp.sync import connector_apply_mcp_tools, connector_sync_mcp_tools
from connectors.models import ConnectorAction
from hooks.catalog import ActionInfo
from platform_core.models import AuditLog
from tests.connectors.mcp.conftest import mcp_connector
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

_ABSENT = "absent"
COMBINATIONS = list(itertools.product((_ABSENT, True, False), repeat=3))


def _tool(name: str, read_only, destructive, idempotent) -> types.Tool:
    hints = {
        key: value
        for key, value in (
            ("readOnlyHint", read_only),
            ("destructiveHint", destructive),
            ("idempotentHint", idempotent),
        )
        if value is not _ABSENT
    }
    return types.Tool(
        name=name,
        description="A tool.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )


def _api(org, *parts):
    return "/api/v1/orgs/{}/{}".format(org.slug, "".join(f"{p}/" for p in parts))


@pytest.mark.parametrize(("read_only", "destructive", "idempotent"), COMBINATIONS)
def test_every_annotation_combination_is_stored_as_a_write_until_an_admin_confirms_it(
    org, org_admin, read_only, destructive, idempotent
):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector, tools=(_tool("probe", read_only, destructive, idempotent),), actor=None
    )
    action = ConnectorAction.objects.unscoped().get(connector=connector, name="probe")
    info = ActionInfo.from_action(action)
    assert action.is_write is True  # whatever the server claims
    assert info.write_reason({}) is not None  # so read-only mode blocks it

    outcome = mcp_action_confirm_read(action=action, actor=org_admin)
    action.refresh_from_db()
    contradictory = read_only is True and destructive is True
    if contradictory:
        assert isinstance(outcome, ConfirmRefused) and "contradict" in outcome.reason
        assert action.is_write is True and action.mcp_read_confirmed_at is None
        assert not AuditLog.objects.filter(action="connector_action.mcp_read_confirmed").exists()
    else:
        assert isinstance(outcome, ReadConfirmed)
        assert action.is_write is False and action.mcp_read_confirmed_by == org_admin
        assert ActionInfo.from_action(action).write_reason({}) is None
        row = AuditLog.objects.get(action="connector_action.mcp_read_confirmed")
        assert row.actor == org_admin and row.target_id == str(action.pk)
        assert row.before["is_write"] is True and row.after["is_write"] is False


def test_a_real_server_tool_claiming_read_only_and_destructive_is_a_write(mcp_server, org, org_admin):
    mcp_server.mcp.add_tool(
        lambda order_id: "gone",
        name="purge_order",
        description="Looks harmless.",
        annotations=types.ToolAnnotations(readOnlyHint=True, destructiveHint=True),
    )
    connector = mcp_connector(org, mcp_server.url)
    connector_sync_mcp_tools(connector=connector, actor=None)
    actions = {a.name: a for a in ConnectorAction.objects.unscoped().filter(connector=connector)}
    assert actions["purge_order"].is_write is True
    assert actions["lookup_order"].is_write is True  # readOnlyHint alone: a suggestion, not a read
    refused = mcp_action_confirm_read(action=actions["purge_order"], actor=org_admin)
    assert isinstance(refused, ConfirmRefused)


def test_an_unconfirmed_mcp_tool_stored_as_a_read_is_still_blocked_in_read_only_mode(org):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector, tools=(_tool("probe", True, _ABSENT, _ABSENT),), actor=None
    )
    ConnectorAction.objects.unscoped().filter(connector=connector).update(is_write=False)  # bypassing save()
    action = ConnectorAction.objects.unscoped().select_related("connector").get(connector=connector)
    assert "confirmed" in ActionInfo.from_action(action).write_reason({})


def test_a_resync_that_changes_annotations_or_schema_withdraws_the_confirmation_and_says_so(
    mcp_server, org, org_admin, client
):
    connector = mcp_connector(org, mcp_server.url)
    connector_sync_mcp_tools(connector=connector, actor=None)
    lookup = ConnectorAction.objects.unscoped().get(connector=connector, name="lookup_order")
    chart = ConnectorAction.objects.unscoped().get(connector=connector, name="chart")
    big = ConnectorAction.objects.unscoped().get(connector=connector, name="big")
    for action in (lookup, chart, big):
        mcp_action_confirm_read(action=action, actor=org_admin)

    mcp_server.mcp.remove_tool("lookup_order")  # same schema, other annotations
    mcp_server.mcp.add_tool(
        lambda order_id: "ok",
        name="lookup_order",
        description="Look up one order by its id.",
        annotations=types.ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=True),
    )
    mcp_server.mcp.remove_tool("chart")  # same annotations, another schema

    def chart(month: str) -> str:
        return month

    mcp_server.mcp.add_tool(
        chart,
        name="chart",
        description="A chart as an image.",
        annotations=types.ToolAnnotations(readOnlyHint=True),
    )
    report = connector_sync_mcp_tools(connector=connector, actor=org_admin)

    assert sorted(report.unconfirmed) == ["chart", "lookup_order"]
    assert report.as_dict()["unconfirmed"] == list(report.unconfirmed)
    actions = {a.name: a for a in ConnectorAction.objects.unscoped().filter(connector=connector)}
    assert actions["lookup_order"].is_write is True and actions["lookup_order"].mcp_read_confirmed_at is None
    assert actions["chart"].is_write is True
    assert actions["big"].is_write is False  # unchanged: still confirmed
    row = AuditLog.objects.filter(action="connector.mcp_tools_synced").latest("id")
    assert sorted(row.after["unconfirmed"]) == ["chart", "lookup_order"]

    assert client.login(username=org_admin.username, password=PASSWORD)
    response = client.post(reverse("admin:connectors_connector_sync_tools", args=[connector.pk]), follow=True)
    assert response.status_code == 200  # nothing changed this time: no withdrawal to report
    mcp_server.mcp.remove_tool("big")
    mcp_server.mcp.add_tool(
        lambda size=5: "x",
        name="big",
        description="A large text, now different.",
        annotations=types.ToolAnnotations(readOnlyHint=True),
    )
    page = client.post(
        reverse("admin:connectors_connector_sync_tools", args=[connector.pk]), follow=True
    ).content.decode()
    assert "no longer confirmed as reads" in page and "big" in page


def test_the_api_confirms_and_withdraws_a_read_with_an_audit_row_each(client_for, org, org_admin, member):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector, tools=(_tool("probe", True, _ABSENT, _ABSENT),), actor=None
    )
    action = ConnectorAction.objects.unscoped().get(connector=connector)
    url = _api(org, "connectors", connector.pk, "actions", action.pk, "confirm-read")

    listed = client_for(org_admin).get(_api(org, "connectors", connector.pk, "actions")).json()["results"][0]
    assert listed["is_write"] is True and listed["mcp_server_claim"] == "read"
    assert listed["mcp_read_confirmed_at"] is None

    assert client_for(member).post(url, format="json").status_code == 403
    response = client_for(org_admin).post(url, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["is_write"] is False and response.json()["mcp_read_confirmed_by"] == "ada"
    assert AuditLog.objects.get(action="connector_action.mcp_read_confirmed").actor == org_admin

    response = client_for(org_admin).delete(url)
    assert response.status_code == 200 and response.json()["is_write"] is True
    assert AuditLog.objects.get(action="connector_action.mcp_read_withdrawn").actor == org_admin


def test_the_api_refuses_to_confirm_a_contradictory_tool_or_an_http_action(client_for, org, org_admin):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(connector=connector, tools=(_tool("probe", True, True, _ABSENT),), actor=None)
    action = ConnectorAction.objects.unscoped().get(connector=connector)
    response = client_for(org_admin).post(
        _api(org, "connectors", connector.pk, "actions", action.pk, "confirm-read"), format="json"
    )
    assert response.status_code == 400 and "contradict" in str(response.json())
    http = ConnectorActionFactory(connector=ConnectorFactory(organization=org, name="crm"))
    response = client_for(org_admin).post(
        _api(org, "connectors", http.connector_id, "actions", http.pk, "confirm-read"), format="json"
    )
    assert response.status_code == 400
    assert not AuditLog.objects.filter(action="connector_action.mcp_read_confirmed").exists()


@pytest.mark.cross_org("connector-action-confirm-read")
def test_another_organisations_admin_cannot_confirm_a_tool(client_for, org, other_org, other_admin):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector, tools=(_tool("probe", True, _ABSENT, _ABSENT),), actor=None
    )
    action = ConnectorAction.objects.unscoped().get(connector=connector)
    for slug in (org.slug, other_org.slug):
        url = f"/api/v1/orgs/{slug}/connectors/{connector.pk}/actions/{action.pk}/confirm-read/"
        assert client_for(other_admin).post(url, format="json").status_code == 404
    action.refresh_from_db()
    assert action.is_write is True and action.mcp_read_confirmed_at is None


def test_the_write_override_cannot_turn_an_mcp_tool_into_a_read(client_for, org, org_admin):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector, tools=(_tool("probe", True, _ABSENT, _ABSENT),), actor=None
    )
    action = ConnectorAction.objects.unscoped().get(connector=connector)
    response = client_for(org_admin).patch(
        _api(org, "connectors", connector.pk, "actions", action.pk),
        {"is_write": False, "is_write_override": True},
        format="json",
    )
    assert response.status_code == 400 and "Confirm as read" in str(response.json())
    action.refresh_from_db()
    assert action.is_write is True


def test_the_admin_confirms_selected_tools_as_reads_with_an_audit_row(client, org, org_admin):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector,
        tools=(_tool("probe", True, _ABSENT, _ABSENT), _tool("odd", True, True, _ABSENT)),
        actor=None,
    )
    ids = [
        str(pk)
        for pk in ConnectorAction.objects.unscoped().filter(connector=connector).values_list("pk", flat=True)
    ]
    assert client.login(username=org_admin.username, password=PASSWORD)
    page = client.post(
        reverse("admin:connectors_connectoraction_changelist"),
        {"action": "confirm_read", "_selected_action": ids},
        follow=True,
    ).content.decode()
    actions = {a.name: a for a in ConnectorAction.objects.unscoped().filter(connector=connector)}
    assert actions["probe"].is_write is False and actions["probe"].mcp_read_confirmed_by == org_admin
    assert actions["odd"].is_write is True and "contradict" in page
    assert AuditLog.objects.filter(action="connector_action.mcp_read_confirmed").count() == 1
    change = client.get(reverse("admin:connectors_connectoraction_change", args=[actions["odd"].pk]))
    assert "both read-only and destructive" in change.content.decode()


def test_the_migration_makes_stored_mcp_reads_unconfirmed_writes(org):
    connector = mcp_connector(org, "https://tools.example.com/mcp")
    connector_apply_mcp_tools(
        connector=connector,
        tools=(_tool("claimed", True, _ABSENT, _ABSENT), _tool("overridden", _ABSENT, _ABSENT, _ABSENT)),
        actor=None,
    )
    ConnectorAction.objects.unscoped().filter(name="claimed").update(is_write=False)
    ConnectorAction.objects.unscoped().filter(name="overridden").update(
        is_write=False, is_write_override=True
    )
    http = ConnectorActionFactory(connector=ConnectorFactory(organization=org, name="crm"))
    migration = import_module("connectors.migrations.0007_mcp_tools_unconfirmed_writes")
    # As migrate runs it: with the models as they were at that migration (their plain managers).
    state = MigrationLoader(connection).project_state(("connectors", "0007_mcp_tools_unconfirmed_writes"))
    migration.mcp_reads_become_unconfirmed_writes(state.apps, None)
    rows = {a.name: a for a in ConnectorAction.objects.unscoped().filter(connector=connector)}
    assert rows["claimed"].is_write is True and rows["overridden"].is_write is True
    assert rows["overridden"].is_write_override is False
    http.refresh_from_db()
    assert http.is_write is False  # other kinds untouched
