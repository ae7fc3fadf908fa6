"""Storing, binding and deleting attachments: an upload is stored with its row or not at all (a refusal,
a storage that fails halfway, a row that cannot be committed: no row and no file remain); it is pending
until its own sender binds it to a message within the per-message limit; the organisation's quota holds;
deletions take the files with them once they commit; the audit log keeps name, size, type and hash, never
the content."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage
from django.db import IntegrityError

from agents.attachments.models import Attachment
from agents.attachments.refusals import AttachmentRefused
from agents.attachments.services import (
    AttachmentDeleted,
    AttachmentsBound,
    AttachmentStored,
    attachment_delete,
    attachment_upload,
    attachments_bind,
)
from agents.services import conversation_delete
from platform_core.models import AuditLog, Organization, Role
from tests.agents.attachments import files
from tests.agents.attachments.conftest import stored_files
from tests.agents.factories import ConversationFactory, MessageFactory
from tests.factories import member_of

pytestmark = pytest.mark.django_db

SECRET = "The contract's secret clause: the discount is 42%."


def upload(org, user, name: str, data: bytes):
    return attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))


def stored(org, user, name: str = "notes.txt", data: bytes = b"Meeting notes.") -> Attachment:
    done = upload(org, user, name, data)
    assert isinstance(done, AttachmentStored), done
    return done.attachment


def conversation_with_message(org, user):
    conversation = ConversationFactory(organization=org, user=user)
    return conversation, MessageFactory(conversation=conversation, content="See the files.")


# --- upload ------------------------------------------------------------------------------------------------


def test_an_upload_is_stored_as_a_pending_attachment_with_what_its_bytes_are(org, member, media_root):
    done = upload(org, member, "screenshot.png", files.PNG)

    assert isinstance(done, AttachmentStored)
    attachment = Attachment.objects.for_org(org).get(pk=done.attachment.pk)
    assert (attachment.kind, attachment.format, attachment.content_type) == ("image", "png", "image/png")
    assert attachment.size == len(files.PNG)
    assert attachment.sha256 == hashlib.sha256(files.PNG).hexdigest()
    assert attachment.uploaded_by == member and attachment.pending and attachment.conversation is None
    assert attachment.file.name == f"attachments/{org.pk}/{attachment.pk}/screenshot.png"
    assert (media_root / attachment.file.name).read_bytes() == files.PNG


def test_the_name_is_cleaned_of_folders_and_control_characters(org, member):
    attachment = stored(org, member, "../../etc/\x00pass\nwd.txt")
    assert attachment.name == "passwd.txt"
    long = stored(org, member, "a" * 300 + ".txt")
    assert len(long.name) == 255 and long.name.endswith(".txt")


def test_the_upload_is_audited_with_name_size_type_and_hash_never_the_content(org, member):
    attachment = stored(org, member, "contract.txt", SECRET.encode())

    row = AuditLog.objects.for_org(org).get(action="attachment.upload")
    assert row.actor == member and row.target_id == str(attachment.pk)
    assert row.after == {
        "name": "contract.txt",
        "size": len(SECRET.encode()),
        "content_type": "text/plain",
        "sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
    }
    assert "42%" not in str(row.after) and "secret clause" not in row.target_repr


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("big.txt", b"x" * 101, "too_large"),
        ("empty.txt", b"", "empty"),
        ("setup.exe", b"MZ" + b"\0" * 50, "unknown_format"),
        ("photo.png", files.JPEG, "extension_mismatch"),
        ("broken.pdf", b"%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n", "malformed"),
        ("secret.pdf", files.pdf(password="pw"), "encrypted"),
        ("secret.docx", files.encrypted_office(), "encrypted"),
        ("bomb.docx", files.zip_bomb_docx(), "compression_too_high"),
        ("bomb.png", files.pixel_bomb(), "too_many_pixels"),
        ("binary.txt", b"\x00\x01\xff", "not_text"),
    ],
)
def test_a_refused_file_leaves_no_row_no_file_and_no_audit_row(
    org, member, media_root, settings, name, data, code
):
    settings.ATTACHMENT_MAX_FILE_BYTES = 100 if code == "too_large" else settings.ATTACHMENT_MAX_FILE_BYTES

    done = upload(org, member, name, data)

    assert isinstance(done, AttachmentRefused) and done.code == code
    assert done.message and "was refused (" not in done.message  # its own words, not the fallback
    assert not Attachment.objects.for_org(org).exists()
    assert stored_files(media_root) == []
    assert not AuditLog.objects.for_org(org).filter(action="attachment.upload").exists()


def test_the_organisations_quota_counts_every_members_attachments(org, member, media_root, settings):
    settings.ATTACHMENT_ORG_QUOTA_BYTES = 100
    colleague = member_of(org, Role.MEMBER, username="colleague")
    stored(org, member, "a.txt", b"a" * 60)

    done = upload(org, colleague, "b.txt", b"b" * 41)

    assert isinstance(done, AttachmentRefused) and done.code == "quota_exceeded"
    assert done.figures == {"used": 60, "quota": 100, "size": 41}
    assert Attachment.objects.for_org(org).count() == 1 and len(stored_files(media_root)) == 1
    assert isinstance(upload(org, colleague, "c.txt", b"c" * 40), AttachmentStored)  # exactly full


def test_the_quota_of_one_organisation_does_not_count_anothers(org, other_org, member, settings):
    settings.ATTACHMENT_ORG_QUOTA_BYTES = 100
    stored(other_org, member_of(other_org, username="gus"), "a.txt", b"a" * 90)
    assert isinstance(upload(org, member, "b.txt", b"b" * 90), AttachmentStored)


def test_a_quota_of_zero_is_no_quota(org, member, settings):
    settings.ATTACHMENT_ORG_QUOTA_BYTES = 0
    assert isinstance(upload(org, member, "b.txt", b"b" * 1000), AttachmentStored)


class HalfWritingStorage(FileSystemStorage):
    """A disk that fills up halfway through the file: the first bytes are written, then it fails."""

    def _save(self, name, content):
        path = self.path(name)
        import os

        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as target:
            target.write(content.read(10))
        raise OSError(28, "No space left on device")


def test_a_storage_that_fails_halfway_leaves_no_file_and_no_row(org, member, media_root, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": f"{__name__}.HalfWritingStorage", "OPTIONS": {"location": str(media_root)}},
    }

    with pytest.raises(OSError, match="No space"):
        upload(org, member, "notes.txt", b"Meeting notes that fill the disk.")

    assert stored_files(media_root) == []
    assert not Attachment.objects.for_org(org).exists()


@pytest.mark.django_db(transaction=True)
def test_a_row_that_cannot_be_committed_leaves_no_file(media_root):
    """The organisation is deleted between the check and the commit: the row's foreign key fails when the
    transaction commits, after the file was stored; the file is deleted again."""
    org = Organization.objects.create(slug="vanishing", name="Vanishing")
    user = member_of(org)
    gone = Organization(pk=org.pk, slug=org.slug, name=org.name)
    Organization.objects.filter(pk=org.pk).delete()

    with pytest.raises(IntegrityError):
        upload(gone, user, "notes.txt", b"Meeting notes.")

    assert stored_files(media_root) == []
    assert not Attachment.objects.unscoped().exists()


def test_an_upload_inside_a_callers_transaction_fails_and_leaves_no_file(org, member, media_root):
    """The file cannot be rolled back with a caller's transaction, so the service will not run in one."""
    from django.db import transaction

    # pytest-django's own transaction is allowed (Django marks it); a real outer one is not.
    with transaction.atomic(), pytest.raises(RuntimeError, match="durable"):
        with transaction.atomic():
            upload(org, member, "notes.txt", b"Meeting notes.")
    assert stored_files(media_root) == []


# --- binding to a message -----------------------------------------------------------------------------------


def test_binding_sends_the_senders_pending_uploads_with_the_message(org, member):
    first, second = stored(org, member, "a.txt"), stored(org, member, "b.png", files.PNG)
    conversation, message = conversation_with_message(org, member)

    done = attachments_bind(
        user=member, conversation=conversation, message=message, attachment_ids=[second.pk, str(first.pk)]
    )

    assert isinstance(done, AttachmentsBound)
    assert [a.pk for a in done.attachments] == [second.pk, first.pk]
    for attachment in Attachment.objects.for_org(org).all():
        assert (attachment.conversation, attachment.message) == (conversation, message)
        assert not attachment.pending


def test_binding_nothing_binds_nothing(org, member):
    conversation, message = conversation_with_message(org, member)
    assert attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[]) == (
        AttachmentsBound(())
    )


def _refused_and_unchanged(org, user, conversation, message, ids, code):
    before = list(
        Attachment.objects.for_org(org).values_list("pk", "conversation_id", "message_id", "bound_at")
    )
    done = attachments_bind(user=user, conversation=conversation, message=message, attachment_ids=ids)
    assert isinstance(done, AttachmentRefused) and done.code == code, done
    after = list(
        Attachment.objects.for_org(org).values_list("pk", "conversation_id", "message_id", "bound_at")
    )
    assert after == before
    return done


def test_binding_refuses_another_members_upload_and_changes_nothing(org, member):
    colleague = member_of(org, Role.MEMBER, username="colleague")
    mine, theirs = stored(org, member), stored(org, colleague)
    conversation, message = conversation_with_message(org, member)

    done = _refused_and_unchanged(org, member, conversation, message, [mine.pk, theirs.pk], "not_found")
    assert done.figures == {"attachment": str(theirs.pk)}


def test_binding_refuses_an_upload_of_another_organisation(org, other_org, member):
    member_of(other_org, Role.MEMBER, username=member.username)  # the same person, in both organisations
    foreign = stored(other_org, member)
    conversation, message = conversation_with_message(org, member)
    _refused_and_unchanged(org, member, conversation, message, [foreign.pk], "not_found")
    _refused_and_unchanged(org, member, conversation, message, ["not-a-uuid"], "not_found")


def test_binding_refuses_an_attachment_already_sent(org, member):
    attachment = stored(org, member)
    conversation, message = conversation_with_message(org, member)
    assert isinstance(
        attachments_bind(
            user=member, conversation=conversation, message=message, attachment_ids=[attachment.pk]
        ),
        AttachmentsBound,
    )
    later = MessageFactory(conversation=conversation, content="Again.")
    _refused_and_unchanged(org, member, conversation, later, [attachment.pk], "already_bound")


def test_binding_refuses_files_over_the_per_message_limit_together(org, member, settings):
    settings.ATTACHMENT_MAX_MESSAGE_BYTES = 100
    first, second = stored(org, member, "a.txt", b"a" * 60), stored(org, member, "b.txt", b"b" * 50)
    conversation, message = conversation_with_message(org, member)

    done = _refused_and_unchanged(
        org, member, conversation, message, [first.pk, second.pk], "attachments_too_large"
    )

    assert done.figures == {"size": 110, "limit": 100}
    assert "100" in done.message or "100 bytes" in done.message
    assert isinstance(
        attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[first.pk]),
        AttachmentsBound,
    )


def test_binding_refuses_a_sender_no_longer_a_member(org, member):
    attachment = stored(org, member)
    conversation, message = conversation_with_message(org, member)
    member.memberships.all().delete()
    _refused_and_unchanged(org, member, conversation, message, [attachment.pk], "not_found")


def test_binding_to_someone_elses_conversation_is_a_programming_error(org, member):
    attachment = stored(org, member)
    conversation, message = conversation_with_message(org, member_of(org, username="owner"))
    with pytest.raises(ValueError):
        attachments_bind(
            user=member, conversation=conversation, message=message, attachment_ids=[attachment.pk]
        )


# --- deletion -----------------------------------------------------------------------------------------------


def test_deleting_a_pending_upload_deletes_its_file_once_committed(
    org, member, media_root, django_capture_on_commit_callbacks
):
    attachment = stored(org, member, "contract.txt", SECRET.encode())

    with django_capture_on_commit_callbacks(execute=True):
        done = attachment_delete(attachment=attachment, actor=member, ip_address="10.0.0.7")

    assert isinstance(done, AttachmentDeleted)
    assert not Attachment.objects.for_org(org).exists()
    assert stored_files(media_root) == []
    row = AuditLog.objects.for_org(org).get(action="attachment.delete")
    assert (row.actor, row.ip_address) == (member, "10.0.0.7")
    assert row.before["reason"] == "deleted_by_user" and row.before["name"] == "contract.txt"
    assert "42%" not in str(row.before)


def test_a_sent_attachment_cannot_be_deleted_on_its_own(org, member, media_root):
    attachment = stored(org, member)
    conversation, message = conversation_with_message(org, member)
    attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[attachment.pk])

    done = attachment_delete(attachment=attachment, actor=member)

    assert isinstance(done, AttachmentRefused) and done.code == "already_bound"
    assert Attachment.objects.for_org(org).filter(pk=attachment.pk).exists()
    assert len(stored_files(media_root)) == 1


def test_deleting_a_conversation_deletes_its_attachments_and_their_files(
    org, member, media_root, django_capture_on_commit_callbacks
):
    kept = stored(org, member, "pending.txt")
    conversation, message = conversation_with_message(org, member)
    sent = [stored(org, member, "a.txt"), stored(org, member, "b.png", files.PNG)]
    attachments_bind(
        user=member, conversation=conversation, message=message, attachment_ids=[a.pk for a in sent]
    )
    other_conversation, other_message = conversation_with_message(org, member)
    elsewhere = stored(org, member, "c.txt")
    attachments_bind(
        user=member, conversation=other_conversation, message=other_message, attachment_ids=[elsewhere.pk]
    )

    with django_capture_on_commit_callbacks(execute=True):
        conversation_delete(conversation=conversation)

    assert set(Attachment.objects.for_org(org).values_list("pk", flat=True)) == {kept.pk, elsewhere.pk}
    assert stored_files(media_root) == sorted([kept.file.name, elsewhere.file.name])
    reasons = (
        AuditLog.objects.for_org(org).filter(action="attachment.delete").values_list("before", flat=True)
    )
    assert sorted(r["name"] for r in reasons) == ["a.txt", "b.png"]
    assert {r["reason"] for r in reasons} == {"conversation_deleted"}


def test_files_are_deleted_only_if_the_deletion_commits(
    org, member, media_root, django_capture_on_commit_callbacks
):
    attachment = stored(org, member)
    conversation, message = conversation_with_message(org, member)
    attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[attachment.pk])

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        conversation_delete(conversation=conversation)

    assert callbacks  # the files' deletion waits for the commit...
    assert len(stored_files(media_root)) == 1  # ...so a rolled-back deletion keeps them


@pytest.mark.django_db(transaction=True)
def test_two_uploads_at_once_cannot_both_fill_the_quotas_last_bytes(media_root, settings):
    """Both uploads pass the first look at the quota and store their files while the organisation's row is
    locked elsewhere; once it is released, the second to commit sees the first and is refused, and its file
    is deleted again (PostgreSQL: SQLite writes one transaction at a time anyway)."""
    import threading
    import time

    from django.db import connection, connections, transaction

    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite runs one write transaction at a time")
    settings.ATTACHMENT_ORG_QUOTA_BYTES = 100
    org = Organization.objects.create(slug="acme", name="Acme")
    users = [member_of(org, username="mia"), member_of(org, username="max")]
    outcomes: list[object] = []

    def send(user) -> None:
        try:
            outcomes.append(upload(org, user, f"{user.username}.txt", b"x" * 60))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(user,)) for user in users]
    with transaction.atomic():
        Organization.objects.select_for_update().get(pk=org.pk)  # what an upload's commit waits for
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while len(stored_files(media_root)) < 2:  # both files stored: both passed the first look
            assert time.monotonic() < deadline, "the uploads never stored their files"
            time.sleep(0.01)
    for thread in threads:
        thread.join(timeout=20)

    assert sorted(type(outcome).__name__ for outcome in outcomes) == ["AttachmentRefused", "AttachmentStored"]
    refused = next(o for o in outcomes if isinstance(o, AttachmentRefused))
    assert refused.code == "quota_exceeded"
    kept = Attachment.objects.for_org(org).get()
    assert stored_files(media_root) == [kept.file.name]
