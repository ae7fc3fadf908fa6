"""An organisation's time zone: the site's by default, a validated IANA zone set by owners and admins in
the admin and the REST API (audited), and the zone its web pages and its admin pages show times in."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from platform_core.models import AuditLog, Organization, Role
from tests.factories import PASSWORD, MembershipFactory, OrganizationFactory, member_of

pytestmark = pytest.mark.django_db


def settings_url(org) -> str:
    return f"/api/v1/orgs/{org.slug}/settings/"


def test_an_organisation_starts_in_the_sites_time_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    org = Organization.objects.create(slug="new", name="New")
    assert org.time_zone == "Europe/Berlin"


def test_an_admin_sets_the_time_zone_through_the_api_and_it_is_audited(client_for, org_admin, org):
    client = client_for(org_admin)
    response = client.patch(settings_url(org), {"time_zone": "Asia/Shanghai"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["time_zone"] == "Asia/Shanghai"
    org.refresh_from_db()
    assert org.time_zone == "Asia/Shanghai"
    row = AuditLog.objects.get(organization=org, action="organization.time_zone.changed")
    assert row.actor == org_admin
    assert (row.before, row.after) == ({"time_zone": "UTC"}, {"time_zone": "Asia/Shanghai"})


def test_an_unknown_time_zone_is_a_clear_400_and_changes_nothing(client_for, org_admin, org):
    response = client_for(org_admin).patch(settings_url(org), {"time_zone": "Mars/Olympus"}, format="json")
    assert response.status_code == 400
    assert "time_zone" in response.json()
    org.refresh_from_db()
    assert org.time_zone == "UTC"
    assert not AuditLog.objects.filter(action="organization.time_zone.changed").exists()


def test_a_member_reads_but_cannot_change_the_time_zone(client_for, member, org):
    client = client_for(member)
    assert client.get(settings_url(org)).json()["time_zone"] == "UTC"
    assert client.patch(settings_url(org), {"time_zone": "Asia/Shanghai"}, format="json").status_code == 403
    org.refresh_from_db()
    assert org.time_zone == "UTC"


def test_an_org_admin_sets_the_time_zone_on_the_organisation_page(client, org_admin, org):
    assert client.login(username=org_admin.username, password=PASSWORD)
    url = reverse("admin:platform_core_organization_change", args=[org.pk])
    refused = client.post(url, {"name": org.name, "time_zone": "Nowhere/Land"})
    assert refused.status_code == 200 and b"Unknown time zone" in refused.content
    response = client.post(url, {"name": org.name, "time_zone": "Asia/Shanghai"})
    assert response.status_code == 302, response.content.decode()[:2000]
    org.refresh_from_db()
    assert org.time_zone == "Asia/Shanghai"
    assert AuditLog.objects.filter(organization=org, action="organization.time_zone.changed").count() == 1


def test_the_organisations_web_pages_show_times_in_its_time_zone(client, org, approver):
    # given an organisation in Shanghai and an approval requested at 12:00 UTC
    from tests.hooks.factories import ApprovalRequestFactory

    org.time_zone = "Asia/Shanghai"
    org.save(update_fields=["time_zone"])
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    requested = datetime(2026, 11, 2, 12, 0, 5, tzinfo=ZoneInfo("UTC"))
    type(approval).objects.unscoped().filter(pk=approval.pk).update(created_at=requested)
    assert client.login(username=approver.username, password=PASSWORD)

    # when the approver opens it
    page = client.get(
        reverse("approvals-inbox-detail", kwargs={"org_slug": org.slug, "approval_id": approval.pk})
    )

    # then it reads in Shanghai time, and the zone does not outlive the request
    assert page.status_code == 200
    assert "2026-11-02 20:00:05" in page.content.decode()
    assert timezone.get_current_timezone_name() == "UTC"


def test_the_admin_shows_times_in_the_time_zone_of_the_organisation_it_administers(client, org, org_admin):
    # given an organisation in Shanghai whose read-only mode changed at 12:00 UTC
    org.time_zone = "Asia/Shanghai"
    org.read_only_changed_at = datetime(2026, 11, 2, 12, 0, tzinfo=ZoneInfo("UTC"))
    org.save(update_fields=["time_zone", "read_only_changed_at"])
    assert client.login(username=org_admin.username, password=PASSWORD)

    # when its admin opens the organisation's admin page
    page = client.get(reverse("admin:platform_core_organization_change", args=[org.pk]))

    # then the time reads in Shanghai time (English admin dates: "Nov. 2, 2026, 8 p.m.")
    assert "Nov. 2, 2026, 8 p.m." in page.content.decode()


def test_an_admin_of_two_organisations_sees_the_sites_time_zone(client, org, settings):
    other = OrganizationFactory(slug="two", name="Two", time_zone="Asia/Tokyo")
    org.time_zone = "Asia/Shanghai"
    org.read_only_changed_at = datetime(2026, 11, 2, 12, 0, tzinfo=ZoneInfo("UTC"))
    org.save(update_fields=["time_zone", "read_only_changed_at"])
    both = member_of(org, Role.ADMIN, username="both")
    MembershipFactory(organization=other, user=both, role=Role.ADMIN)
    assert client.login(username="both", password=PASSWORD)
    page = client.get(reverse("admin:platform_core_organization_change", args=[org.pk]))
    assert page.status_code == 200
    assert "Nov. 2, 2026, noon" in page.content.decode()
