"""The attachments' retention, as beat's sweeper applies it: uploads never sent go after
ATTACHMENT_PENDING_HOURS, every attachment of an organisation with a retention period goes that many days
after its upload, orphans of a cascade go at once; each with its file and an audit row, nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.utils import timezone

from agents.attachments.models import Attachment
from agents.attachments.retention import SweepReport, attachments_sweep
from agents.attachments.selectors import attachments_visible_to
from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
from agents.attachments.tasks import sweep_attachments
from platform_core.models import AuditLog, Organization
from tests.agents.attachments.conftest import stored_files
from tests.agents.factories import ConversationFactory, MessageFactory
from tests.eager_tasks import tasks_run_eagerly
from tests.factories import member_of


def stored(org, user, name="notes.txt", *, age=timedelta(0), sent=False) -> Attachment:
    done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(b"Notes."))
    assert isinstance(done, AttachmentStored)
    attachment = done.attachment
    if sent:
        conversation = ConversationFactory(organization=org, user=user)
        message = MessageFactory(conversation=conversation)
        attachments_bind(
            user=user, conversation=conversation, message=message, attachment_ids=[attachment.pk]
        )
    Attachment.objects.for_org(org).filter(pk=attachment.pk).update(created_at=timezone.now() - age)
    return attachment


def remaining(org) -> set[str]:
    return set(Attachment.objects.for_org(org).values_list("name", flat=True))


@pytest.mark.django_db
def test_uploads_never_sent_are_deleted_after_the_pending_hours(
    org, member, media_root, settings, django_capture_on_commit_callbacks
):
    settings.ATTACHMENT_PENDING_HOURS = 24
    stored(org, member, "stale.txt", age=timedelta(hours=25))
    fresh = stored(org, member, "fresh.txt", age=timedelta(hours=23))
    sent = stored(org, member, "sent.txt", age=timedelta(days=400), sent=True)

    with django_capture_on_commit_callbacks(execute=True):
        report = attachments_sweep()

    assert report == SweepReport(never_sent=1)
    assert remaining(org) == {"fresh.txt", "sent.txt"}  # no retention period: a sent file stays
    assert stored_files(media_root) == sorted([fresh.file.name, sent.file.name])
    row = AuditLog.objects.for_org(org).get(action="attachment.delete")
    assert row.actor is None and row.before["reason"] == "never_sent" and row.before["name"] == "stale.txt"


@pytest.mark.django_db
def test_an_organisations_retention_period_deletes_its_attachments_even_from_kept_conversations(
    org, other_org, member, media_root, django_capture_on_commit_callbacks
):
    Organization.objects.filter(pk=org.pk).update(attachment_retention_days=30)
    stored(org, member, "old.txt", age=timedelta(days=31), sent=True)
    young = stored(org, member, "young.txt", age=timedelta(days=29), sent=True)
    outsider = member_of(other_org, username="gus")
    kept_forever = stored(other_org, outsider, "ancient.txt", age=timedelta(days=3000), sent=True)

    with django_capture_on_commit_callbacks(execute=True):
        report = attachments_sweep()

    assert report == SweepReport(expired=1)
    assert remaining(org) == {"young.txt"} and remaining(other_org) == {"ancient.txt"}
    assert stored_files(media_root) == sorted([young.file.name, kept_forever.file.name])
    assert AuditLog.objects.for_org(org).get(action="attachment.delete").before["reason"] == "retention"


@pytest.mark.django_db
def test_attachments_orphaned_by_a_cascade_are_seen_by_nobody_and_swept(
    org, member, media_root, django_capture_on_commit_callbacks
):
    attachment = stored(org, member, "sent.txt", sent=True)
    # An operator deletes the conversation in the admin: a cascade, not the platform's service.
    attachment.refresh_from_db()
    attachment.conversation.delete()

    orphan = Attachment.objects.for_org(org).get(pk=attachment.pk)
    assert orphan.conversation_id is None and orphan.bound_at is not None
    assert not attachments_visible_to(organization_id=org.pk, user=member).exists()

    with django_capture_on_commit_callbacks(execute=True):
        assert attachments_sweep() == SweepReport(orphaned=1)
    assert remaining(org) == set() and stored_files(media_root) == []


@pytest.mark.django_db
def test_the_sweep_looks_at_the_time_it_is_given(org, member, settings, django_capture_on_commit_callbacks):
    settings.ATTACHMENT_PENDING_HOURS = 2
    stored(org, member, "pending.txt")

    with django_capture_on_commit_callbacks(execute=True):
        assert attachments_sweep(now=timezone.now() + timedelta(hours=1)) == SweepReport()
        assert attachments_sweep(now=timezone.now() + timedelta(hours=3)) == SweepReport(never_sent=1)


@pytest.mark.django_db(transaction=True)
def test_the_beat_task_deletes_due_rows_and_files_and_a_second_run_finds_nothing(media_root, settings):
    settings.ATTACHMENT_PENDING_HOURS = 24
    org = Organization.objects.create(slug="acme", name="Acme", attachment_retention_days=7)
    user = member_of(org, username="mia")
    stored(org, user, "stale.txt", age=timedelta(days=2))
    stored(org, user, "expired.txt", age=timedelta(days=8), sent=True)
    kept = stored(org, user, "kept.txt", age=timedelta(days=6), sent=True)

    with tasks_run_eagerly(propagate=True):
        first = sweep_attachments.delay().get()
        second = sweep_attachments.delay().get()

    assert first == {"never_sent": 1, "expired": 1, "orphaned": 0}
    assert second == {"never_sent": 0, "expired": 0, "orphaned": 0}
    assert remaining(org) == {"kept.txt"}
    assert stored_files(media_root) == [kept.file.name]


def test_beat_runs_the_sweeper():
    entry = django_settings.CELERY_BEAT_SCHEDULE["sweep-attachments"]
    assert entry["task"] == sweep_attachments.name == "agents.attachments.tasks.sweep_attachments"
    assert float(entry["schedule"]) > 0  # type: ignore[arg-type]
