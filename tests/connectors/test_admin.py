"""Connector admin: write-only secrets, actions inline, OpenAPI import page, test connection, call logs."""

from __future__ import annotations

import html
import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from connectors.demo.api.document import demo_openapi_document
from connectors.models import Connector, ConnectorAction, ConnectorCallLog
from platform_core.models import AuditLog
from tests.connectors.admin_form import DEFAULT_LIMITS_AND_NO_ACTIONS
from tests.factories import (
    PASSWORD,
    ConnectorActionFactory,
    ConnectorCallLogFactory,
    ConnectorFactory,
)
from tests.fakes.http_service import Scripted, running_http_service

pytestmark = pytest.mark.django_db

SECRET = "sk-admin-1a2b3c4d5e"
DEMO = json.dumps(demo_openapi_document("http://127.0.0.1:8000/demo-api"))


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _url(name, *args):
    return reverse(f"admin:connectors_{name}", args=args)


def _form(org, **overrides):
    data = {
        "organization": org.pk,
        "name": "crm",
        "description": "",
        "kind": "http",
        "is_active": "on",
        "base_url": "https://crm.example.com/api",
        "idempotency_header": "Idempotency-Key",
        "auth_type": "bearer",
        "auth_key_name": "",
        "auth_username": "",
        "oauth_client_id": "",
        "oauth_token_url": "",
        "oauth_scope": "",
        "auth_secret_new": "",
        "dsn_new": "",
        **DEFAULT_LIMITS_AND_NO_ACTIONS,
    }
    data.update(overrides)
    return data


def test_adding_a_connector_encrypts_the_secret_and_no_page_shows_it(admin_client, org_admin, org):
    response = admin_client.post(_url("connector_add"), _form(org, auth_secret_new=SECRET))
    assert response.status_code == 302, response.content.decode()[:3000]
    connector = Connector.objects.unscoped().get(organization=org, name="crm")
    assert connector.auth_secret == SECRET
    assert AuditLog.objects.get(action="connector.created").actor == org_admin

    change = admin_client.get(_url("connector_change", connector.pk))
    page = change.content.decode()
    assert change.status_code == 200 and SECRET not in page
    assert connector.__dict__["auth_secret"].token not in page  # not even the ciphertext
    assert 'name="auth_secret_new"' in page and "A value is stored" in page
    listing = admin_client.get(_url("connector_changelist")).content.decode()
    assert SECRET not in listing


def test_a_blank_secret_keeps_the_stored_one_a_new_value_replaces_it_and_clear_removes_it(admin_client, org):
    connector = ConnectorFactory(organization=org, name="crm", auth_type="bearer")
    connector.auth_secret = SECRET
    connector.save()
    url = _url("connector_change", connector.pk)

    assert admin_client.post(url, _form(org, description="kept")).status_code == 302
    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == SECRET

    assert admin_client.post(url, _form(org, auth_secret_new="sk-new-value-99")).status_code == 302
    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == "sk-new-value-99"

    both = admin_client.post(url, _form(org, auth_secret_new="x-value-long", auth_secret_clear="on"))
    assert both.status_code == 200 and "not both" in both.content.decode()

    needed = admin_client.post(url, _form(org, auth_secret_clear="on"))
    assert needed.status_code == 200  # bearer auth needs a secret
    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == "sk-new-value-99"

    cleared = admin_client.post(url, _form(org, auth_type="none", auth_secret_clear="on"))
    assert cleared.status_code == 302
    assert Connector.objects.unscoped().get(pk=connector.pk).has_secret("auth_secret") is False


def test_the_admin_renames_or_turns_off_the_idempotency_header_and_it_is_audited(admin_client, org):
    add_page = admin_client.get(_url("connector_add")).content.decode()
    assert 'name="idempotency_header"' in add_page and 'value="Idempotency-Key"' in add_page
    connector = ConnectorFactory(
        organization=org, name="crm", auth_type="none", base_url="https://crm.example.com/api"
    )
    url = _url("connector_change", connector.pk)

    renamed = admin_client.post(url, _form(org, auth_type="none", idempotency_header="X-Request-Id"))
    assert renamed.status_code == 302, renamed.content.decode()[:3000]
    assert Connector.objects.unscoped().get(pk=connector.pk).idempotency_header == "X-Request-Id"
    update = AuditLog.objects.filter(action="connector.updated").order_by("id").last()
    assert update.before == {"idempotency_header": "Idempotency-Key"}
    assert update.after == {"idempotency_header": "X-Request-Id"}

    assert admin_client.post(url, _form(org, auth_type="none", idempotency_header="")).status_code == 302
    assert Connector.objects.unscoped().get(pk=connector.pk).idempotency_header == ""

    for bad, message in [
        ("Idempotency Key", "Give an HTTP header name"),
        ("authorization", "already used for the request itself or its credentials"),
    ]:
        refused = admin_client.post(url, _form(org, auth_type="none", idempotency_header=bad))
        assert refused.status_code == 200 and message in refused.content.decode()
    assert Connector.objects.unscoped().get(pk=connector.pk).idempotency_header == ""


def test_actions_are_edited_inline_and_audited(admin_client, org):
    connector = ConnectorFactory(organization=org, name="crm")
    data = _form(
        org,
        auth_type="none",
        **{
            "actions-TOTAL_FORMS": "1",
            "actions-0-name": "close_ticket",
            "actions-0-method": "POST",
            "actions-0-path_template": "/tickets/{id}/close",
            "actions-0-is_active": "on",
        },
    )
    response = admin_client.post(_url("connector_change", connector.pk), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    action = ConnectorAction.objects.unscoped().get(connector=connector, name="close_ticket")
    assert action.is_write is True and action.organization_id == org.pk
    assert AuditLog.objects.filter(action="connector_action.created", target_id=str(action.pk)).exists()


def test_the_import_page_takes_a_pasted_document_and_shows_the_report(admin_client, org):
    connector = ConnectorFactory(organization=org, name="erp")
    url = _url("connector_import_openapi", connector.pk)
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(url, {"text": DEMO})
    assert response.status_code == 200
    assert response.context["report"].added and "create_payment" in response.content.decode()
    assert ConnectorAction.objects.unscoped().filter(connector=connector, is_active=True).count() == 6
    change_page = admin_client.get(_url("connector_change", connector.pk)).content.decode()
    assert url in change_page  # the change page links to the import page


def test_the_import_page_takes_an_uploaded_file_and_reports_removals(admin_client, org):
    connector = ConnectorFactory(organization=org, name="erp")
    url = _url("connector_import_openapi", connector.pk)
    admin_client.post(url, {"text": DEMO})
    smaller = json.loads(DEMO)
    del smaller["paths"]["/payments/"]
    upload = SimpleUploadedFile("erp.json", json.dumps(smaller).encode(), content_type="application/json")
    response = admin_client.post(url, {"file": upload})
    assert sorted(response.context["report"].removed) == ["create_payment", "list_payments"]


def test_a_broken_document_shows_what_and_where_and_changes_nothing(admin_client, org):
    connector = ConnectorFactory(organization=org, name="erp")
    doc = '{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/nope"}]}}}}'
    response = admin_client.post(_url("connector_import_openapi", connector.pk), {"text": doc})
    page = response.content.decode()
    assert (
        response.status_code == 200 and "points to nothing" in page and "paths./a.get.parameters[0]" in page
    )
    assert not ConnectorAction.objects.unscoped().filter(connector=connector).exists()
    empty = admin_client.post(_url("connector_import_openapi", connector.pk), {})
    assert "Upload a file or paste a document." in empty.content.decode()


def _messages(response) -> list[str]:
    """The admin's message list as the page shows it (the rendered text, not the stored message)."""
    page = response.content.decode()
    items = page.split('<ul class="messagelist">', 1)[1].split("</ul>", 1)[0]
    return [html.unescape(li.split(">", 1)[1].split("</li>", 1)[0]) for li in items.split("<li")[1:]]


def test_test_connection_reports_success_and_failure_under_the_name_as_typed(admin_client, org):
    with running_http_service() as service:
        good = ConnectorFactory(
            organization=org, name="good", base_url=service.base_url, allowed_private_hosts=["127.0.0.1"]
        )
        blocked = ConnectorFactory(organization=org, name="blocked", base_url=service.base_url)
        response = admin_client.post(_url("connector_test_connection", good.pk), follow=True)
        [works] = _messages(response)
        assert works.startswith("good: connection works (127.0.0.1 answered HTTP 200 OK, ")

        response = admin_client.post(
            _url("connector_changelist"),
            {"action": "test_connection", ACTION_CHECKBOX_NAME: [str(blocked.pk)]},
            follow=True,
        )
        [failed] = _messages(response)
        assert failed.startswith("blocked: connection failed: blocked by the SSRF guard")
        assert service.connections == 1  # only the allowed connector reached the loopback service
    assert admin_client.get(_url("connector_test_connection", good.pk)).status_code == 405


def test_test_connection_of_a_base_url_answering_404_is_not_reported_as_working(admin_client, org):
    with running_http_service() as service:
        base_url = f"{service.base_url}/erp/api"
        service.script("/erp/api", Scripted(404, '{"detail": "Not found."}'))
        connector = ConnectorFactory(
            organization=org, name="demo-api", base_url=base_url, allowed_private_hosts=["127.0.0.1"]
        )

        response = admin_client.post(_url("connector_test_connection", connector.pk), follow=True)

    assert _messages(response) == [
        f"demo-api: connection not confirmed: the server answered HTTP 404 Not Found at {base_url}: "
        "check the base URL (unless the API has nothing at its base URL: then call one of its actions to "
        "check it)."
    ]
    assert 'class="warning"' in response.content.decode().split('<ul class="messagelist">', 1)[1]


def test_call_logs_are_read_only_and_filterable(admin_client, org):
    log = ConnectorCallLogFactory(organization=org, status="error", arguments={"password": "[redacted]"})
    ConnectorCallLogFactory(organization=org, status="ok")
    changelist = admin_client.get(_url("connectorcalllog_changelist") + "?status__exact=error")
    assert changelist.status_code == 200
    assert [o.pk for o in changelist.context["cl"].result_list] == [log.pk]
    view = admin_client.get(_url("connectorcalllog_change", log.pk))
    assert (
        view.status_code == 200 and 'type="submit"' not in view.content.decode().split('id="content-main"')[1]
    )
    assert admin_client.get(_url("connectorcalllog_add")).status_code == 403
    assert admin_client.post(_url("connectorcalllog_delete", log.pk), {"post": "yes"}).status_code == 403
    assert ConnectorCallLog.objects.unscoped().filter(pk=log.pk).exists()


def test_plain_members_cannot_open_the_connector_admin(client, member, org):
    member.is_staff = True
    member.save()
    assert client.login(username=member.username, password=PASSWORD)
    connector = ConnectorFactory(organization=org)
    assert client.get(_url("connector_changelist")).status_code == 403
    assert client.get(_url("connector_import_openapi", connector.pk)).status_code in (403, 404)


# --- other organisations ------------------------------------------------------------------------------


def test_another_organisations_connector_pages_are_404_and_unchanged(admin_client, org, other_org):
    foreign = ConnectorFactory(organization=other_org, name="globex-erp")
    foreign.auth_secret = SECRET
    foreign.save()
    assert admin_client.get(_url("connector_import_openapi", foreign.pk)).status_code == 404
    assert admin_client.post(_url("connector_import_openapi", foreign.pk), {"text": DEMO}).status_code == 404
    assert admin_client.post(_url("connector_test_connection", foreign.pk)).status_code == 404
    assert not ConnectorAction.objects.unscoped().filter(connector=foreign).exists()
    changed = admin_client.post(_url("connector_change", foreign.pk), _form(org, name="stolen"))
    assert changed.status_code in (302, 403, 404)
    foreign.refresh_from_db()
    assert foreign.name == "globex-erp" and foreign.organization_id == other_org.pk


def test_choices_and_filters_never_list_another_organisations_connectors(admin_client, org, other_org):
    own = ConnectorFactory(organization=org, name="own-erp")
    foreign = ConnectorFactory(organization=other_org, name="globex-erp")
    ConnectorCallLogFactory(organization=org, connector=own)
    ConnectorCallLogFactory(organization=other_org, connector=foreign)
    ConnectorActionFactory(connector=foreign)

    add_action = admin_client.get(_url("connectoraction_add")).content.decode()
    assert "own-erp" in add_action and "globex-erp" not in add_action
    logs = admin_client.get(_url("connectorcalllog_changelist")).content.decode()
    assert "own-erp" in logs and "globex-erp" not in logs
    actions = admin_client.get(_url("connectoraction_changelist")).content.decode()
    assert "globex-erp" not in actions

    planted = admin_client.post(
        _url("connectoraction_add"),
        {
            "connector": str(foreign.pk),
            "name": "planted",
            "method": "GET",
            "path_template": "/x",
            "parameters": "{}",
            "param_locations": "{}",
        },
    )
    assert planted.status_code == 200  # the foreign connector is not a valid choice
    assert not ConnectorAction.objects.unscoped().filter(name="planted").exists()


def test_the_connector_pages_speak_chinese(admin_client, org):
    connector = ConnectorFactory(organization=org, name="erp")
    page = admin_client.get(
        _url("connector_change", connector.pk), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert "导入 OpenAPI" in page and "测试连接" in page and "允许的内网主机" in page
