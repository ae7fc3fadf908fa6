from __future__ import annotations

import pytest

from platform_core.models import AuditLog
from platform_core.services import audit_log_write

pytestmark = pytest.mark.django_db


def test_api_refuses_anonymous_callers(api_client, org):
    assert api_client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code in (401, 403)


def test_api_refuses_an_unknown_bearer_token(api_client, org):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer apt_not-a-real-token")
    response = api_client.get(f"/api/v1/orgs/{org.slug}/settings/")
    assert response.status_code == 401


def test_revoked_token_is_refused(client_for, member, org):
    client = client_for(member)
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 200
    member.api_keys.update(revoked=True)
    assert client.get(f"/api/v1/orgs/{org.slug}/settings/").status_code == 401


def test_org_list_shows_only_the_callers_organisations_with_roles(client_for, member, org, other_org):
    response = client_for(member).get("/api/v1/orgs/")
    assert response.status_code == 200
    assert [(o["slug"], o["role"]) for o in response.json()["results"]] == [("acme", "member")]


def test_member_reads_settings_but_cannot_change_them(client_for, member, org):
    client = client_for(member)
    body = client.get(f"/api/v1/orgs/{org.slug}/settings/").json()
    assert body["read_only"] is False and body["slug"] == "acme"
    response = client.patch(
        f"/api/v1/orgs/{org.slug}/settings/", {"read_only": True, "read_only_reason": "x"}
    )
    assert response.status_code == 403
    org.refresh_from_db()
    assert org.read_only is False


def test_admin_toggles_read_only_through_the_api_and_it_is_audited(client_for, org_admin, org):
    client = client_for(org_admin)
    response = client.patch(
        f"/api/v1/orgs/{org.slug}/settings/",
        {"read_only": True, "read_only_reason": "Migration"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["read_only"] is True
    assert response.json()["read_only_changed_by"] == org_admin.username
    row = AuditLog.objects.get(organization=org, action="organization.read_only.enabled")
    assert row.actor == org_admin and row.ip_address == "127.0.0.1"

    logs = client.get(f"/api/v1/orgs/{org.slug}/audit-logs/").json()["results"]
    assert logs[0]["action"] == "organization.read_only.enabled"
    assert logs[0]["actor"] == org_admin.username


def test_turning_on_read_only_without_reason_is_a_clear_400(client_for, org_admin, org):
    response = client_for(org_admin).patch(
        f"/api/v1/orgs/{org.slug}/settings/", {"read_only": True}, format="json"
    )
    assert response.status_code == 400
    assert "read_only_reason" in response.json()
    org.refresh_from_db()
    assert org.read_only is False


def test_audit_log_is_for_admins_and_has_no_write_methods(client_for, member, org_admin, org):
    row = audit_log_write(organization=org, actor=org_admin, action="demo.event")
    assert client_for(member).get(f"/api/v1/orgs/{org.slug}/audit-logs/").status_code == 403
    admin_client = client_for(org_admin)
    assert admin_client.get(f"/api/v1/orgs/{org.slug}/audit-logs/{row.pk}/").status_code == 200
    assert admin_client.delete(f"/api/v1/orgs/{org.slug}/audit-logs/{row.pk}/").status_code == 405
    assert admin_client.post(f"/api/v1/orgs/{org.slug}/audit-logs/", {"action": "forged"}).status_code == 405
    assert AuditLog.objects.filter(pk=row.pk).exists()


def test_audit_log_list_filters_by_action_with_a_fixed_query_count(
    client_for, org_admin, org, django_assert_max_num_queries
):
    for i in range(20):
        audit_log_write(organization=org, actor=org_admin, action="a" if i % 2 else "b")
    client = client_for(org_admin)
    with django_assert_max_num_queries(8):
        body = client.get(f"/api/v1/orgs/{org.slug}/audit-logs/?action=a").json()
    assert body["count"] == 10 and {r["action"] for r in body["results"]} == {"a"}


def test_openapi_schema_is_served(client_for, member):
    response = client_for(member).get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/v1/orgs/{org_slug}/settings/" in response.content


@pytest.mark.cross_org("org-settings")
def test_settings_of_another_org_are_404_and_unchanged(client_for, org_admin, other_org):
    client = client_for(org_admin)
    assert client.get(f"/api/v1/orgs/{other_org.slug}/settings/").status_code == 404
    response = client.patch(
        f"/api/v1/orgs/{other_org.slug}/settings/",
        {"read_only": True, "read_only_reason": "x"},
        format="json",
    )
    assert response.status_code == 404
    other_org.refresh_from_db()
    assert other_org.read_only is False


@pytest.mark.cross_org("audit-log-list", "audit-log-detail")
def test_audit_log_hides_other_orgs_rows(client_for, org_admin, org, other_org):
    own = audit_log_write(organization=org, actor=None, action="own.event")
    foreign = audit_log_write(organization=other_org, actor=None, action="foreign.event")
    client = client_for(org_admin)
    listed = {r["id"] for r in client.get(f"/api/v1/orgs/{org.slug}/audit-logs/").json()["results"]}
    assert own.pk in listed and foreign.pk not in listed
    assert client.get(f"/api/v1/orgs/{org.slug}/audit-logs/{foreign.pk}/").status_code == 404
    assert client.get(f"/api/v1/orgs/{other_org.slug}/audit-logs/").status_code == 404
