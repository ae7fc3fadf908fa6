"""An organisation's retention of chat attachments: a new organisation takes the site's
(``ATTACHMENT_RETENTION_DAYS``, unset: kept with their conversation); owners and admins change it in the
REST API's settings and on the organisation's admin page, audited; members only read it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.models import AuditLog, Organization
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def settings_url(org) -> str:
    return f"/api/v1/orgs/{org.slug}/settings/"


@pytest.mark.parametrize(("site", "expected"), [(90, 90), (None, None)])
def test_a_new_organisation_takes_the_sites_retention(settings, site, expected):
    settings.ATTACHMENT_RETENTION_DAYS = site
    assert Organization.objects.create(slug="new", name="New").attachment_retention_days == expected


def test_an_admin_sets_the_retention_through_the_api_and_it_is_audited(client_for, org_admin, org):
    client = client_for(org_admin)

    response = client.patch(settings_url(org), {"attachment_retention_days": 30}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["attachment_retention_days"] == 30
    org.refresh_from_db()
    assert org.attachment_retention_days == 30
    row = AuditLog.objects.for_org(org).get(action="organization.attachment_retention.changed")
    assert row.actor == org_admin
    assert (row.before, row.after) == ({"attachment_retention_days": None}, {"attachment_retention_days": 30})

    forever = client.patch(settings_url(org), {"attachment_retention_days": None}, format="json")
    assert forever.status_code == 200 and forever.json()["attachment_retention_days"] is None


@pytest.mark.parametrize("days", [0, -1, 40000])
def test_a_retention_out_of_range_is_a_400_and_changes_nothing(client_for, org_admin, org, days):
    response = client_for(org_admin).patch(
        settings_url(org), {"attachment_retention_days": days}, format="json"
    )
    assert response.status_code == 400 and "attachment_retention_days" in response.json()
    org.refresh_from_db()
    assert org.attachment_retention_days is None
    assert (
        not AuditLog.objects.for_org(org).filter(action="organization.attachment_retention.changed").exists()
    )


def test_a_member_reads_but_cannot_change_the_retention(client_for, member, org):
    client = client_for(member)
    assert client.get(settings_url(org)).json()["attachment_retention_days"] is None
    response = client.patch(settings_url(org), {"attachment_retention_days": 7}, format="json")
    assert response.status_code == 403
    org.refresh_from_db()
    assert org.attachment_retention_days is None


def test_an_org_admin_sets_the_retention_on_the_organisation_page(client, org_admin, org):
    assert client.login(username=org_admin.username, password=PASSWORD)
    url = reverse("admin:platform_core_organization_change", args=[org.pk])
    page = client.get(url)
    assert page.status_code == 200 and b"attachment_retention_days" in page.content

    response = client.post(url, {"name": org.name, "time_zone": "UTC", "attachment_retention_days": "14"})

    assert response.status_code == 302, response.content.decode()[:2000]
    org.refresh_from_db()
    assert org.attachment_retention_days == 14
    assert (
        AuditLog.objects.for_org(org).filter(action="organization.attachment_retention.changed").count() == 1
    )
