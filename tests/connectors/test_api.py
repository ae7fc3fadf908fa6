"""The connectors API: admins write, members read, secrets never returned, other organisations invisible."""

from __future__ import annotations

import json

import pytest

from connectors.demo_api.document import demo_openapi_document
from connectors.models import Connector, ConnectorAction, ConnectorCallLog
from platform_core.models import AuditLog
from tests.factories import ConnectorActionFactory, ConnectorCallLogFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

SECRET = "tok-9f8e7d6c5b4a"
DEMO = demo_openapi_document("http://127.0.0.1:8000/demo-api")


def _url(org, *parts):
    return "/api/v1/orgs/{}/{}".format(org.slug, "".join(f"{p}/" for p in parts))


def _bearer_connector(org, name="crm"):
    connector = ConnectorFactory(organization=org, name=name, auth_type="bearer")
    connector.auth_secret = SECRET
    connector.save()
    return connector


# --- connectors --------------------------------------------------------------------------------------


def test_members_read_connectors_without_any_secret(client_for, member, org):
    connector = _bearer_connector(org)
    ConnectorActionFactory(connector=connector)
    response = client_for(member).get(_url(org, "connectors"))
    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    row = response.json()["results"][0]
    assert row["has_auth_secret"] is True and row["has_dsn"] is False
    assert "auth_secret" not in row and "dsn" not in row
    assert row["action_count"] == 1


def test_members_cannot_create_change_or_delete_connectors(client_for, member, org):
    connector = ConnectorFactory(organization=org)
    client = client_for(member)
    assert client.post(_url(org, "connectors"), {"name": "x"}, format="json").status_code == 403
    assert (
        client.patch(_url(org, "connectors", connector.pk), {"name": "y"}, format="json").status_code == 403
    )
    assert client.delete(_url(org, "connectors", connector.pk)).status_code == 403
    assert Connector.objects.unscoped().get(pk=connector.pk).name == connector.name


def test_admin_creates_a_connector_whose_secret_is_stored_encrypted_and_never_echoed(
    client_for, org_admin, org
):
    body = {
        "name": "crm",
        "base_url": "https://crm.example.com/api",
        "auth_type": "api_key_header",
        "auth_key_name": "X-Api-Key",
        "auth_secret": SECRET,
    }
    response = client_for(org_admin).post(_url(org, "connectors"), body, format="json")
    assert response.status_code == 201, response.content
    assert SECRET not in response.content.decode() and response.json()["has_auth_secret"] is True
    connector = Connector.objects.unscoped().get(organization=org, name="crm")
    assert connector.auth_secret == SECRET
    audit = AuditLog.objects.get(action="connector.created")
    assert SECRET not in json.dumps(audit.after) and audit.after["auth_secret_set"] is True
    assert audit.actor == org_admin and audit.ip_address == "127.0.0.1"


def test_secrets_are_kept_when_omitted_cleared_with_empty_and_replaced_with_a_value(
    client_for, org_admin, org
):
    connector = _bearer_connector(org)
    client = client_for(org_admin)
    url = _url(org, "connectors", connector.pk)
    assert client.patch(url, {"description": "CRM"}, format="json").status_code == 200
    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == SECRET

    replaced = client.patch(url, {"auth_secret": "tok-new-value-1"}, format="json")
    assert replaced.status_code == 200 and "tok-new-value-1" not in replaced.content.decode()
    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == "tok-new-value-1"

    cleared = client.patch(url, {"auth_type": "none", "auth_secret": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["has_auth_secret"] is False
    update = AuditLog.objects.filter(action="connector.updated").order_by("id").last()
    assert update.before == {"auth_type": "bearer", "auth_secret_set": True}
    assert update.after == {"auth_type": "none", "auth_secret_set": False}


def test_invalid_connectors_get_clear_field_errors(client_for, org_admin, org):
    ConnectorFactory(organization=org, name="crm")
    client = client_for(org_admin)
    missing = client.post(
        _url(org, "connectors"),
        {"name": "x", "base_url": "https://x.example.com", "auth_type": "bearer"},
        format="json",
    )
    assert missing.status_code == 400 and "auth_secret" in missing.json()
    duplicate = client.post(
        _url(org, "connectors"), {"name": "crm", "base_url": "https://x.example.com"}, format="json"
    )
    assert duplicate.status_code == 400 and "name" in duplicate.json()


def test_the_idempotency_header_is_read_written_and_validated_through_the_api(client_for, org_admin, org):
    client = client_for(org_admin)
    created = client.post(
        _url(org, "connectors"), {"name": "pay", "base_url": "https://pay.example.com"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["idempotency_header"] == "Idempotency-Key"
    url = _url(org, "connectors", created.json()["id"])

    renamed = client.patch(url, {"idempotency_header": "X-Idempotency-Key"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["idempotency_header"] == "X-Idempotency-Key"
    turned_off = client.patch(url, {"idempotency_header": ""}, format="json")
    assert turned_off.status_code == 200 and turned_off.json()["idempotency_header"] == ""

    for bad in ["Idempotency Key", "Content-Type"]:
        refused = client.patch(url, {"idempotency_header": bad}, format="json")
        assert refused.status_code == 400 and "idempotency_header" in refused.json()
    assert Connector.objects.unscoped().get(pk=created.json()["id"]).idempotency_header == ""


def test_creating_with_an_openapi_document_imports_its_operations(client_for, org_admin, org):
    body = {"name": "erp", "allowed_private_hosts": ["127.0.0.1"], "openapi": DEMO}
    response = client_for(org_admin).post(_url(org, "connectors"), body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["base_url"] == "http://127.0.0.1:8000/demo-api"  # from the document's servers
    assert len(data["import_report"]["added"]) == 6 and data["active_action_count"] == 6
    assert "openapi" not in data


def test_creating_with_a_broken_document_creates_nothing_and_says_where(client_for, org_admin, org):
    doc = {"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/nope"}]}}}}
    body = {"name": "erp", "base_url": "https://erp.example.com", "openapi": doc}
    response = client_for(org_admin).post(_url(org, "connectors"), body, format="json")
    assert response.status_code == 400
    assert response.json()["location"] == "paths./a.get.parameters[0]"
    assert "points to nothing" in response.json()["openapi"][0]
    assert not Connector.objects.unscoped().filter(organization=org).exists()


def test_reimport_endpoint_reports_changes_and_is_for_admins(client_for, org_admin, member, org):
    connector = ConnectorFactory(organization=org, name="erp")
    url = _url(org, "connectors", connector.pk, "import-openapi")
    assert client_for(member).post(url, {"document": DEMO}, format="json").status_code == 403
    first = client_for(org_admin).post(url, {"document": json.dumps(DEMO)}, format="json")
    assert first.status_code == 200 and len(first.json()["added"]) == 6
    smaller = json.loads(json.dumps(DEMO))
    del smaller["paths"]["/payments/"]
    second = client_for(org_admin).post(url, {"document": smaller}, format="json")
    assert sorted(second.json()["removed"]) == ["create_payment", "list_payments"]
    bad = client_for(org_admin).post(url, {"document": "openapi: [broken"}, format="json")
    assert bad.status_code == 400 and "invalid YAML" in bad.json()["document"][0]


def test_admin_deletes_a_connector_and_it_is_audited(client_for, org_admin, org):
    connector = ConnectorFactory(organization=org)
    assert client_for(org_admin).delete(_url(org, "connectors", connector.pk)).status_code == 204
    assert not Connector.objects.unscoped().filter(pk=connector.pk).exists()
    assert AuditLog.objects.filter(action="connector.deleted", target_id=str(connector.pk)).exists()


# --- actions --------------------------------------------------------------------------------------


def test_admin_adds_an_action_with_derived_is_write_and_members_read_it(client_for, org_admin, member, org):
    connector = ConnectorFactory(organization=org)
    url = _url(org, "connectors", connector.pk, "actions")
    body = {
        "name": "close_ticket",
        "description": "Close a support ticket.",
        "method": "POST",
        "path_template": "/tickets/{id}/close",
        "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        "param_locations": {"id": "path"},
        "is_write": False,  # ignored: derived from the method unless overridden
    }
    response = client_for(org_admin).post(url, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["is_write"] is True and response.json()["connector"] == str(connector.pk)
    listed = client_for(member).get(url).json()["results"]
    assert [a["name"] for a in listed] == ["close_ticket"]
    assert client_for(member).post(url, body, format="json").status_code == 403

    detail = _url(org, "connectors", connector.pk, "actions", response.json()["id"])
    overridden = client_for(org_admin).patch(
        detail, {"is_write": False, "is_write_override": True}, format="json"
    )
    assert overridden.json()["is_write"] is False
    assert AuditLog.objects.filter(action="connector_action.updated").exists()


def test_invalid_actions_get_clear_errors(client_for, org_admin, org):
    connector = ConnectorFactory(organization=org)
    url = _url(org, "connectors", connector.pk, "actions")
    body = {"name": "bad", "method": "GET", "path_template": "no-slash", "parameters": {"type": "array"}}
    response = client_for(org_admin).post(url, body, format="json")
    assert response.status_code == 400
    assert {"path_template", "parameters"} <= set(response.json())


# --- call logs ------------------------------------------------------------------------------------


def test_admins_see_every_call_and_members_only_their_own(client_for, org_admin, member, org):
    mine = ConnectorCallLogFactory(organization=org, user=member)
    theirs = ConnectorCallLogFactory(organization=org, user=org_admin, status="error")
    admin_ids = {r["id"] for r in client_for(org_admin).get(_url(org, "call-logs")).json()["results"]}
    member_ids = {r["id"] for r in client_for(member).get(_url(org, "call-logs")).json()["results"]}
    assert admin_ids == {mine.pk, theirs.pk} and member_ids == {mine.pk}
    assert client_for(member).get(_url(org, "call-logs", theirs.pk)).status_code == 404


def test_call_logs_filter_by_status_and_connector(client_for, org_admin, org):
    ok = ConnectorCallLogFactory(organization=org)
    failed = ConnectorCallLogFactory(organization=org, status="error")
    client = client_for(org_admin)
    assert [r["id"] for r in client.get(_url(org, "call-logs") + "?status=error").json()["results"]] == [
        failed.pk
    ]
    by_connector = client.get(_url(org, "call-logs") + f"?connector={ok.connector_id}").json()["results"]
    assert [r["id"] for r in by_connector] == [ok.pk]
    assert client.get(_url(org, "call-logs") + "?connector=not-a-uuid").json()["results"] == []


def test_call_logs_are_read_only(client_for, org_admin, org):
    log = ConnectorCallLogFactory(organization=org)
    client = client_for(org_admin)
    assert client.post(_url(org, "call-logs"), {"status": "ok"}, format="json").status_code == 405
    assert client.delete(_url(org, "call-logs", log.pk)).status_code == 405


# --- query counts ---------------------------------------------------------------------------------


def test_list_endpoints_do_not_grow_queries_with_rows(
    client_for, org_admin, org, django_assert_max_num_queries
):
    client = client_for(org_admin)
    for _ in range(5):
        connector = ConnectorFactory(organization=org)
        ConnectorActionFactory(connector=connector)
        ConnectorCallLogFactory(organization=org, connector=connector, user=org_admin)
    connector = Connector.objects.unscoped().filter(organization=org).first()
    # token (+ last-used update), org, membership, count, page: constant however many rows
    with django_assert_max_num_queries(6):
        assert len(client.get(_url(org, "connectors")).json()["results"]) == 5
    with django_assert_max_num_queries(7):
        assert len(client.get(_url(org, "connectors", connector.pk, "actions")).json()["results"]) == 1
    with django_assert_max_num_queries(7):
        assert len(client.get(_url(org, "call-logs")).json()["results"]) == 5


# --- other organisations ----------------------------------------------------------------------------


@pytest.mark.cross_org("connector-list", "connector-detail", "connector-import-openapi")
def test_another_organisations_connector_is_invisible_and_untouchable(client_for, org_admin, org, other_org):
    foreign = _bearer_connector(other_org, name="secret-crm")
    client = client_for(org_admin)
    listed = client.get(_url(org, "connectors")).json()["results"]
    assert listed == []
    url = _url(org, "connectors", foreign.pk)
    assert client.get(url).status_code == 404
    assert client.patch(url, {"name": "stolen", "auth_secret": "x"}, format="json").status_code == 404
    assert client.put(url, {"name": "stolen"}, format="json").status_code == 404
    assert client.delete(url).status_code == 404
    imported = client.post(
        _url(org, "connectors", foreign.pk, "import-openapi"), {"document": DEMO}, format="json"
    )
    assert imported.status_code == 404
    foreign.refresh_from_db()
    assert foreign.name == "secret-crm" and foreign.auth_secret == SECRET
    assert not ConnectorAction.objects.unscoped().filter(connector=foreign).exists()
    assert not AuditLog.objects.filter(organization=other_org).exists()


@pytest.mark.cross_org("connector-action-list", "connector-action-detail")
def test_another_organisations_actions_are_invisible_and_untouchable(client_for, org_admin, org, other_org):
    foreign = ConnectorActionFactory(connector__organization=other_org, name="wire_money")
    own = ConnectorFactory(organization=org)
    client = client_for(org_admin)
    foreign_list = _url(org, "connectors", foreign.connector_id, "actions")
    assert client.get(foreign_list).status_code == 404
    body = {"name": "planted", "method": "GET", "path_template": "/x"}
    assert client.post(foreign_list, body, format="json").status_code == 404
    # the foreign action under the caller's own connector and under the foreign connector
    for connector_id in (own.pk, foreign.connector_id):
        url = _url(org, "connectors", connector_id, "actions", foreign.pk)
        assert client.get(url).status_code == 404
        assert client.patch(url, {"description": "changed"}, format="json").status_code == 404
        assert client.delete(url).status_code == 404
    assert client.get(_url(org, "connectors", own.pk, "actions")).json()["results"] == []
    foreign.refresh_from_db()
    assert (
        foreign.description == "List the items."
        and not ConnectorAction.objects.unscoped().filter(name="planted").exists()
    )


@pytest.mark.cross_org("call-log-list", "call-log-detail")
def test_another_organisations_call_logs_are_invisible(client_for, org_admin, org, other_org):
    foreign = ConnectorCallLogFactory(organization=other_org, arguments={"customer": "Globex secret"})
    client = client_for(org_admin)
    listed = client.get(_url(org, "call-logs"))
    assert listed.json()["results"] == [] and b"Globex" not in listed.content
    assert client.get(_url(org, "call-logs", foreign.pk)).status_code == 404
    assert client.get(_url(org, "call-logs") + f"?connector={foreign.connector_id}").json()["results"] == []
    assert ConnectorCallLog.objects.unscoped().filter(pk=foreign.pk).exists()


@pytest.mark.parametrize("body_format", ["json", "multipart"])
def test_a_null_mcp_command_is_a_field_error_not_a_server_error(client_for, org_admin, org, body_format):
    """Found by the API fuzzer: PATCH with ``mcp_command`` null reached the database's NOT NULL (500)."""
    connector = ConnectorFactory(organization=org, name="crm")
    response = client_for(org_admin).patch(
        _url(org, "connectors", connector.pk),
        {"mcp_command": None if body_format == "json" else "null"},
        format=body_format,
    )
    assert response.status_code == 400 and "mcp_command" in response.json()
    connector.refresh_from_db()
    assert connector.mcp_command == []
