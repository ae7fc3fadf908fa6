"""Issue #31, findings 2 and 5: a server's bad tool (no name, a 300-character name, a NUL character, a
schema with a number JSON cannot carry back) is skipped with its reason in the sync report; the other
tools are stored; a create answers 201 with the report instead of a 400 that left the connector
stored; and nothing of it makes the actions list or "Sync tools" answer 500."""

from __future__ import annotations

import json

import pytest

from connectors.models import Connector, ConnectorAction
from tests.connectors.mcp.conftest import mcp_connector
from tests.fakes.mcp_servers import RawAnswer

pytestmark = pytest.mark.django_db

GOOD = {"name": "fine", "description": "A good tool.", "inputSchema": {"type": "object"}}


def _api(org, *parts):
    return "/api/v1/orgs/{}/{}".format(org.slug, "".join(f"{p}/" for p in parts))


def _listing(*tools) -> RawAnswer:
    return RawAnswer(json.dumps({"tools": [GOOD, *tools]}).encode())


def test_a_create_whose_server_lists_a_300_character_tool_stores_the_connector_and_skips_that_tool(
    client_for, org, org_admin, mcp_server
):
    mcp_server.mcp.add_tool(lambda: "ok", name="x" * 300, description="Too long a name.")
    body = {
        "name": "erp",
        "kind": "mcp",
        "base_url": mcp_server.url,
        "allowed_private_hosts": ["127.0.0.1"],
    }
    response = client_for(org_admin).post(_api(org, "connectors"), body, format="json")

    assert response.status_code == 201, response.content
    sync = response.json()["tool_sync"]
    assert "lookup_order" in sync["added"]
    (skipped,) = sync["skipped"]
    assert skipped["location"] == "x" * 200 and "longer than 200 characters" in skipped["reason"]
    connector = Connector.objects.unscoped().get(organization=org, name="erp")
    assert ConnectorAction.objects.unscoped().filter(connector=connector).count() == 8


def test_a_create_that_is_refused_leaves_nothing_and_never_calls_the_server(
    client_for, org, org_admin, mcp_server
):
    body = {"name": "erp", "kind": "mcp", "base_url": mcp_server.url, "auth_type": "bearer"}  # no secret
    response = client_for(org_admin).post(_api(org, "connectors"), body, format="json")
    assert response.status_code == 400
    assert not Connector.objects.unscoped().filter(organization=org).exists()
    assert mcp_server.requests == []


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ({"name": "", "inputSchema": {"type": "object"}}, "the tool has no name"),
        ({"name": "nul\u0000name", "inputSchema": {"type": "object"}}, "control characters"),
        (
            {"name": "huge_number", "inputSchema": {"type": "object", "maximum": 1e400}},
            "cannot be stored",
        ),
        (
            {"name": "nul_schema", "inputSchema": {"type": "object", "properties": {"a\u0000": {}}}},
            "cannot be stored",
        ),
        ({"name": "array_schema", "inputSchema": {"type": "array"}}, "not an object"),
        ({"description": "No name at all.", "inputSchema": {"type": "object"}}, "not valid (name"),
    ],
    ids=["empty", "nul-name", "non-finite-number", "nul-in-schema", "array-schema", "missing-name"],
)
def test_a_bad_tool_is_skipped_with_its_reason_and_the_actions_list_still_answers(
    client_for, org, org_admin, mcp_server, tool, reason
):
    raw = json.dumps({"tools": [GOOD, tool]}).replace("Infinity", "1e400").encode()
    mcp_server.raw_answers["tools/list"] = RawAnswer(raw)
    connector = mcp_connector(org, mcp_server.url)
    client = client_for(org_admin)

    response = client.post(_api(org, "connectors", connector.pk, "sync-tools"), format="json")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["added"] == ["fine"]
    (skipped,) = report["skipped"]
    assert reason in skipped["reason"]

    listed = client.get(_api(org, "connectors", connector.pk, "actions"))
    assert listed.status_code == 200 and [a["name"] for a in listed.json()["results"]] == ["fine"]


def test_a_nul_character_in_a_description_is_stored_spelled_out(client_for, org, org_admin, mcp_server):
    tool = {"name": "odd", "description": "Reads\u0000 orders.", "inputSchema": {"type": "object"}}
    mcp_server.raw_answers["tools/list"] = _listing(tool)
    connector = mcp_connector(org, mcp_server.url)
    response = client_for(org_admin).post(_api(org, "connectors", connector.pk, "sync-tools"), format="json")
    assert response.status_code == 200, response.content
    assert (
        ConnectorAction.objects.unscoped().get(connector=connector, name="odd").description
        == "Reads\\u0000 orders."
    )
