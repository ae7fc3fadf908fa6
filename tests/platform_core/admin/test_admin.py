from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from platform_core.models import AuditLog
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_for(client):
    def login(user):
        assert client.login(username=user.username, password=PASSWORD)
        return client

    return login


def _change_url(org):
    return reverse("admin:platform_core_organization_change", args=[org.pk])


def test_org_admin_sees_only_their_organisations(admin_client_for, org_admin, org, other_org):
    response = admin_client_for(org_admin).get(reverse("admin:platform_core_organization_changelist"))
    assert response.status_code == 200
    assert b"Acme" in response.content and b"Globex" not in response.content


def test_org_admin_cannot_open_another_organisation(admin_client_for, org_admin, other_org):
    response = admin_client_for(org_admin).get(_change_url(other_org))
    assert response.status_code in (302, 404)
    assert b"Globex" not in response.content


def test_plain_member_cannot_use_the_admin(admin_client_for, org):
    from tests.factories import member_of

    user = member_of(org, "member", is_staff=True)
    response = admin_client_for(user).get(reverse("admin:platform_core_organization_changelist"))
    assert response.status_code == 403


def test_org_admin_toggles_read_only_on_the_organisation_page(admin_client_for, org_admin, org):
    client = admin_client_for(org_admin)
    form = {"name": org.name, "read_only": "on", "read_only_reason": "Year-end freeze"}
    response = client.post(_change_url(org), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    org.refresh_from_db()
    assert (
        org.read_only and org.read_only_reason == "Year-end freeze" and org.read_only_changed_by == org_admin
    )
    row = AuditLog.objects.get(organization=org, action="organization.read_only.enabled")
    assert row.actor == org_admin

    response = client.post(_change_url(org), {"name": org.name, "read_only_reason": ""})
    assert response.status_code == 302
    org.refresh_from_db()
    assert org.read_only is False
    assert AuditLog.objects.filter(organization=org, action="organization.read_only.disabled").count() == 1


def test_read_only_switch_without_reason_shows_an_error_and_changes_nothing(admin_client_for, org_admin, org):
    response = admin_client_for(org_admin).post(_change_url(org), {"name": org.name, "read_only": "on"})
    assert response.status_code == 200
    assert b"A reason is required" in response.content
    org.refresh_from_db()
    assert org.read_only is False


def test_admin_action_asks_for_a_reason_then_turns_read_only_on(admin_client_for, org_admin, org):
    client = admin_client_for(org_admin)
    url = reverse("admin:platform_core_organization_changelist")
    first = client.post(url, {"action": "enable_read_only", ACTION_CHECKBOX_NAME: [org.pk]})
    assert first.status_code == 200 and b"Reason" in first.content
    org.refresh_from_db()
    assert org.read_only is False
    second = client.post(
        url,
        {"action": "enable_read_only", ACTION_CHECKBOX_NAME: [org.pk], "apply": "1", "reason": "Incident 42"},
    )
    assert second.status_code == 302
    org.refresh_from_db()
    assert org.read_only and org.read_only_reason == "Incident 42"

    client.post(url, {"action": "disable_read_only", ACTION_CHECKBOX_NAME: [org.pk]})
    org.refresh_from_db()
    assert org.read_only is False


def test_admin_action_cannot_touch_another_organisation(admin_client_for, org_admin, org, other_org):
    client = admin_client_for(org_admin)
    url = reverse("admin:platform_core_organization_changelist")
    client.post(
        url,
        {
            "action": "enable_read_only",
            ACTION_CHECKBOX_NAME: [other_org.pk],
            "apply": "1",
            "reason": "sabotage",
        },
    )
    other_org.refresh_from_db()
    assert other_org.read_only is False


def test_audit_log_admin_is_read_only(admin_client_for, org_admin, org):
    row = AuditLog.objects.create(organization=org, action="x")
    client = admin_client_for(org_admin)
    assert client.get(reverse("admin:platform_core_auditlog_changelist")).status_code == 200
    assert client.get(reverse("admin:platform_core_auditlog_add")).status_code == 403
    assert (
        client.post(
            reverse("admin:platform_core_auditlog_delete", args=[row.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert AuditLog.objects.filter(pk=row.pk).exists()


def test_superuser_sees_every_organisation(client, org, other_org):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    client.login(username="root", password=PASSWORD)
    response = client.get(reverse("admin:platform_core_organization_changelist"))
    assert b"Acme" in response.content and b"Globex" in response.content
