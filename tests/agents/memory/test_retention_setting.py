"""An organisation's retention of memories: unset on a new organisation (kept until the person deletes
them); owners and admins change it in the REST API's settings and on the organisation's admin page,
audited; members only read it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.models import MAX_MEMORY_RETENTION_DAYS, AuditLog, Organization
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

ACTION = "organization.memory_retention.changed"


def settings_url(org) -> str:
    return f"/api/v1/orgs/{org.slug}/settings/"


def test_a_new_organisation_keeps_memories_until_they_are_deleted():
    assert Organization.objects.create(slug="new", name="New").memory_retention_days is None


def test_an_admin_sets_the_retention_through_the_api_and_it_is_audited(client_for, org_admin, org):
    client = client_for(org_admin)

    response = client.patch(settings_url(org), {"memory_retention_days": 180}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["memory_retention_days"] == 180
    org.refresh_from_db()
    assert org.memory_retention_days == 180
    row = AuditLog.objects.for_org(org).get(action=ACTION)
    assert row.actor == org_admin
    assert (row.before, row.after) == ({"memory_retention_days": None}, {"memory_retention_days": 180})

    forever = client.patch(settings_url(org), {"memory_retention_days": None}, format="json")
    assert forever.status_code == 200 and forever.json()["memory_retention_days"] is None
    assert AuditLog.objects.for_org(org).filter(action=ACTION).count() == 2


def test_the_same_retention_again_changes_nothing(client_for, org_admin, org):
    client = client_for(org_admin)
    client.patch(settings_url(org), {"memory_retention_days": 30}, format="json")
    client.patch(settings_url(org), {"memory_retention_days": 30}, format="json")
    assert AuditLog.objects.for_org(org).filter(action=ACTION).count() == 1


@pytest.mark.parametrize("days", [0, -1, MAX_MEMORY_RETENTION_DAYS + 1])
def test_a_retention_out_of_range_is_a_400_and_changes_nothing(client_for, org_admin, org, days):
    response = client_for(org_admin).patch(settings_url(org), {"memory_retention_days": days}, format="json")
    assert response.status_code == 400 and "memory_retention_days" in response.json()
    org.refresh_from_db()
    assert org.memory_retention_days is None
    assert not AuditLog.objects.for_org(org).filter(action=ACTION).exists()


def test_a_member_reads_but_cannot_change_the_retention(client_for, member, org):
    client = client_for(member)
    assert client.get(settings_url(org)).json()["memory_retention_days"] is None
    response = client.patch(settings_url(org), {"memory_retention_days": 7}, format="json")
    assert response.status_code == 403
    org.refresh_from_db()
    assert org.memory_retention_days is None


def test_an_org_admin_sets_the_retention_on_the_organisation_page(client, org_admin, org):
    assert client.login(username=org_admin.username, password=PASSWORD)
    url = reverse("admin:platform_core_organization_change", args=[org.pk])
    page = client.get(url)
    assert page.status_code == 200 and b"memory_retention_days" in page.content

    response = client.post(url, {"name": org.name, "time_zone": "UTC", "memory_retention_days": "90"})

    assert response.status_code == 302, response.content.decode()[:2000]
    org.refresh_from_db()
    assert org.memory_retention_days == 90
    assert AuditLog.objects.for_org(org).filter(action=ACTION).count() == 1
    # Emptied on the page: kept until the person deletes them
    client.post(url, {"name": org.name, "time_zone": "UTC", "memory_retention_days": ""})
    org.refresh_from_db()
    assert org.memory_retention_days is None
