"""OpenAPI import: documents to action specs, clear errors, and in-place re-import with a report."""

from __future__ import annotations

import copy
import json

import pytest
from jsonschema import validators

from agents.engine.tools import FunctionTool, ToolRegistry
from connectors.demo_api.document import demo_openapi_document
from connectors.models import ConnectorAction
from connectors.openapi import OpenAPIError, parse_openapi
from connectors.services import connector_import_openapi
from platform_core.models import AuditLog
from tests.factories import ConnectorActionFactory, ConnectorFactory

DEMO = demo_openapi_document("http://127.0.0.1:8000/demo-api")

YAML_DOC = """
openapi: 3.1.0
info: {title: Inventory, version: "2"}
servers: [{url: "https://inventory.example.com/v2/"}]
paths:
  /items/{sku}:
    get:
      summary: Get an item
      parameters:
        - {name: sku, in: path, required: true, schema: {type: string}}
        - {name: X-Warehouse, in: header, schema: {type: [string, "null"]}}
        - {name: session, in: cookie, schema: {type: string}}
    delete:
      operationId: removeItem
      parameters:
        - {name: sku, in: path, required: true, schema: {type: string}}
"""


def _by_name(text: str) -> dict:
    return {a.name: a for a in parse_openapi(text).actions}


def test_every_operation_of_the_demo_document_becomes_an_action_with_method_based_is_write():
    actions = _by_name(json.dumps(DEMO))
    assert {name: (a.method, a.path_template, a.is_write) for name, a in actions.items()} == {
        "list_purchase_orders": ("GET", "/purchase-orders/", False),
        "create_purchase_order": ("POST", "/purchase-orders/", True),
        "get_purchase_order": ("GET", "/purchase-orders/{order_id}/", False),
        "approve_purchase_order": ("POST", "/purchase-orders/{order_id}/approve/", True),
        "list_payments": ("GET", "/payments/", False),
        "create_payment": ("POST", "/payments/", True),
    }


def test_parameters_and_json_body_merge_into_one_object_schema_with_locations():
    actions = _by_name(json.dumps(DEMO))
    approve = actions["approve_purchase_order"]
    assert approve.param_locations == {"order_id": "path", "approver": "body", "comment": "body"}
    assert approve.parameters["required"] == ["order_id"]
    assert approve.parameters["properties"]["order_id"] == {
        "type": "integer",
        "description": "Purchase order id",
    }
    assert approve.parameters["additionalProperties"] is False
    assert approve.description.startswith("Approve a draft purchase order\n\nOnly draft orders")

    create = actions["create_purchase_order"]
    # $ref and allOf resolved; server-set (readOnly) fields are not asked for; required kept.
    assert set(create.parameters["properties"]) == {"supplier", "description", "amount", "currency"}
    assert create.parameters["required"] == ["supplier", "amount"]
    assert "example" not in json.dumps(create.parameters)
    assert actions["list_purchase_orders"].param_locations == {"status": "query", "supplier": "query"}


def test_every_generated_schema_is_a_valid_json_schema_the_engine_accepts():
    actions = parse_openapi(json.dumps(DEMO)).actions + parse_openapi(YAML_DOC).actions
    for action in actions:
        validators.validator_for(action.parameters).check_schema(action.parameters)

    async def noop(**kwargs):
        return "ok"

    registry = ToolRegistry(
        FunctionTool(a.name, a.description, noop, parameters=a.parameters) for a in actions
    )
    assert registry.validate("get_purchase_order", {"order_id": 3}) == []
    assert registry.validate("get_purchase_order", {}) != []
    assert registry.validate("create_payment", {"order_id": 1, "amount": "5", "surprise": 1}) != []


def test_a_yaml_3_1_document_imports_with_names_from_operation_id_or_method_and_path():
    parsed = parse_openapi(YAML_DOC)
    actions = {a.name: a for a in parsed.actions}
    assert set(actions) == {"get_items_sku", "removeItem"}
    get = actions["get_items_sku"]
    assert get.param_locations == {"sku": "path", "X-Warehouse": "header"}  # cookies cannot be sent
    assert get.parameters["properties"]["X-Warehouse"] == {"type": ["string", "null"]}
    assert actions["removeItem"].is_write is True
    assert parsed.server_url == "https://inventory.example.com/v2"


def test_openapi_3_0_keywords_are_translated_to_json_schema():
    doc = {
        "openapi": "3.0.0",
        "paths": {
            "/q": {
                "get": {
                    "operationId": "q",
                    "parameters": [
                        {
                            "name": "n",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "nullable": True,
                                "minimum": 0,
                                "exclusiveMinimum": True,
                            },
                        },
                        {
                            "name": "tag",
                            "in": "query",
                            "schema": {"type": "string", "x-internal": 1, "deprecated": True},
                        },
                    ],
                }
            }
        },
    }
    schema = parse_openapi(json.dumps(doc)).actions[0].parameters
    assert schema["properties"]["n"] == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    assert schema["properties"]["tag"] == {"type": "string"}


def test_a_recursive_schema_is_cut_at_the_recursion():
    doc = {
        "openapi": "3.0.0",
        "paths": {
            "/nodes": {
                "post": {
                    "operationId": "add_node",
                    "requestBody": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}
                    },
                }
            }
        },
        "components": {
            "schemas": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                    },
                }
            }
        },
    }
    schema = parse_openapi(json.dumps(doc)).actions[0].parameters
    assert schema["properties"]["children"]["items"]["description"] == "(recursive Node)"


def test_operations_that_cannot_become_actions_are_skipped_and_reported():
    doc = copy.deepcopy(DEMO)
    doc["paths"]["/upload"] = {
        "post": {"operationId": "upload", "requestBody": {"content": {"multipart/form-data": {"schema": {}}}}}
    }
    parsed = parse_openapi(json.dumps(doc))
    assert "upload" not in {a.name for a in parsed.actions}
    assert parsed.skipped == (
        ("paths./upload.post", "only JSON request bodies are supported, not multipart/form-data"),
    )


@pytest.mark.parametrize(
    ("text", "message", "location"),
    [
        ("", "the document is empty", ""),
        (
            '{"openapi": "3.0.0", "paths": {',
            "invalid JSON: Expecting property name enclosed in double quotes at line 1",
            "",
        ),
        ("openapi: 3.0.0\npaths: [unclosed", "invalid YAML", ""),
        ("- just\n- a list", "the document must be a JSON or YAML object", ""),
        ('{"swagger": "2.0", "paths": {}}', "Swagger 2.0 documents are not supported", "swagger"),
        ('{"openapi": "2.5", "paths": {}}', "unsupported OpenAPI version", "openapi"),
        ('{"openapi": "3.0.0"}', "'paths' must be an object", "paths"),
        ('{"openapi": "3.0.0", "paths": {"items": {}}}', "a path must start with '/'", "paths.items"),
        (
            '{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}',
            "reference '#/components/parameters/Nope' points to nothing",
            "paths./a.get.parameters[0]",
        ),
        (
            '{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "other.yaml#/P"}]}}}}',
            "only local references",
            "paths./a.get.parameters[0]",
        ),
        (
            '{"openapi": "3.0.0", "paths": {"/a/{id}": {"get": {}}}}',
            "path placeholder {id} has no path parameter",
            "paths./a/{id}.get",
        ),
    ],
)
def test_invalid_documents_get_a_clear_error_saying_what_and_where(text, message, location):
    with pytest.raises(OpenAPIError) as excinfo:
        parse_openapi(text)
    assert message in excinfo.value.message
    assert excinfo.value.location == location


# --- the import service --------------------------------------------------------------------------


@pytest.fixture
def connector(org):
    return ConnectorFactory(organization=org, name="erp", base_url="http://127.0.0.1:8000/demo-api")


def _active(connector):
    return set(
        ConnectorAction.objects.unscoped()
        .filter(connector=connector, is_active=True)
        .values_list("name", flat=True)
    )


@pytest.mark.django_db
def test_import_creates_actions_and_writes_an_audit_row(connector, org_admin):
    report = connector_import_openapi(connector=connector, document_text=json.dumps(DEMO), actor=org_admin)
    assert len(report.added) == 6 and report.changed == () and report.removed == ()
    assert _active(connector) == set(report.added)
    action = ConnectorAction.objects.unscoped().get(connector=connector, name="create_payment")
    assert action.is_write is True and action.organization_id == connector.organization_id
    audit = AuditLog.objects.get(action="connector.openapi_imported")
    assert audit.actor == org_admin and sorted(audit.after["added"]) == sorted(report.added)


@pytest.mark.django_db
def test_reimport_updates_in_place_and_reports_added_changed_and_removed(connector, org_admin):
    connector_import_openapi(connector=connector, document_text=json.dumps(DEMO), actor=org_admin)
    ids = dict(ConnectorAction.objects.unscoped().filter(connector=connector).values_list("name", "id"))
    override = ConnectorAction.objects.unscoped().get(connector=connector, name="list_payments")
    override.is_write, override.is_write_override = True, True  # the admin's judgement
    override.save()
    manual = ConnectorActionFactory(connector=connector, name="hand_made")

    doc = copy.deepcopy(DEMO)
    doc["paths"]["/payments/"]["get"]["summary"] = "List all payments"
    del doc["paths"]["/purchase-orders/{order_id}/approve/"]
    doc["paths"]["/suppliers/"] = {"get": {"operationId": "list_suppliers", "summary": "List suppliers"}}
    report = connector_import_openapi(connector=connector, document_text=json.dumps(doc), actor=org_admin)

    assert report.added == ("list_suppliers",)
    assert report.changed == ("list_payments",)
    assert report.removed == ("approve_purchase_order",)
    assert len(report.unchanged) == 4
    payments = ConnectorAction.objects.unscoped().get(connector=connector, name="list_payments")
    assert payments.id == ids["list_payments"]  # updated in place
    assert payments.description == "List all payments" and payments.is_write is True
    removed = ConnectorAction.objects.unscoped().get(connector=connector, name="approve_purchase_order")
    assert removed.is_active is False and removed.removed_by_import_at is not None  # deactivated, kept
    assert (
        ConnectorAction.objects.unscoped().get(pk=manual.pk).is_active is True
    )  # hand-made actions untouched

    again = connector_import_openapi(connector=connector, document_text=json.dumps(DEMO), actor=org_admin)
    assert again.added == ("approve_purchase_order",) and again.removed == ("list_suppliers",)
    assert ConnectorAction.objects.unscoped().get(pk=ids["approve_purchase_order"]).is_active is True


@pytest.mark.django_db
def test_an_invalid_document_changes_nothing(connector, org_admin):
    connector_import_openapi(connector=connector, document_text=json.dumps(DEMO), actor=org_admin)
    before = list(
        ConnectorAction.objects.unscoped()
        .filter(connector=connector)
        .values_list("name", "is_active", "updated_at")
    )
    with pytest.raises(OpenAPIError):
        connector_import_openapi(connector=connector, document_text='{"openapi": "3.0.0"}', actor=org_admin)
    after = list(
        ConnectorAction.objects.unscoped()
        .filter(connector=connector)
        .values_list("name", "is_active", "updated_at")
    )
    assert after == before
    assert AuditLog.objects.filter(action="connector.openapi_imported").count() == 1


@pytest.mark.django_db
def test_only_http_connectors_take_openapi_documents(org):
    db = ConnectorFactory(organization=org, kind="database", base_url="")
    with pytest.raises(OpenAPIError, match="HTTP connectors"):
        connector_import_openapi(connector=db, document_text=json.dumps(DEMO), actor=None)
