from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from platform_core.models import AppendOnlyError, AuditLog
from platform_core.services import organization_set_read_only

pytestmark = pytest.mark.django_db


def test_audit_log_rows_cannot_be_updated_or_deleted(org):
    row = AuditLog.objects.create(organization=org, action="x")
    row.action = "changed"
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.delete()
    with pytest.raises(AppendOnlyError):
        AuditLog.objects.filter(pk=row.pk).update(action="changed")
    with pytest.raises(AppendOnlyError):
        AuditLog.objects.filter(pk=row.pk).delete()
    assert AuditLog.objects.get(pk=row.pk).action == "x"


def test_turning_on_read_only_mode_requires_a_reason(org, org_admin):
    with pytest.raises(ValidationError):
        organization_set_read_only(organization=org, actor=org_admin, enabled=True, reason="  ")
    org.refresh_from_db()
    assert org.read_only is False
    assert not AuditLog.objects.filter(organization=org, action__startswith="organization.read_only").exists()


def test_read_only_changes_record_who_when_and_before_after(org, org_admin):
    organization_set_read_only(
        organization=org, actor=org_admin, enabled=True, reason="Quarter close", ip_address="10.1.2.3"
    )
    org.refresh_from_db()
    assert org.read_only and org.read_only_reason == "Quarter close"
    assert org.read_only_changed_by == org_admin and org.read_only_changed_at is not None
    row = AuditLog.objects.get(organization=org, action="organization.read_only.enabled")
    assert row.actor == org_admin
    assert row.before == {"read_only": False, "read_only_reason": ""}
    assert row.after == {"read_only": True, "read_only_reason": "Quarter close"}
    assert row.ip_address == "10.1.2.3"

    organization_set_read_only(organization=org, actor=org_admin, enabled=False)
    org.refresh_from_db()
    assert org.read_only is False and org.read_only_reason == ""
    assert AuditLog.objects.filter(organization=org, action="organization.read_only.disabled").count() == 1


def test_setting_the_same_read_only_state_again_writes_no_audit_row(org, org_admin):
    organization_set_read_only(organization=org, actor=org_admin, enabled=True, reason="Audit")
    organization_set_read_only(organization=org, actor=org_admin, enabled=True, reason="Audit")
    assert AuditLog.objects.filter(organization=org, action="organization.read_only.enabled").count() == 1
