"""The attachments' REST API: members upload files (each answered with its outcome, in their language),
list, read, download and delete what is theirs; an attachment is seen only by its uploader while pending
and by its conversation's owner once sent, only while a member; another user's or another organisation's
is a 404 on every route; API keys are held to their scopes; an upload cut off midway stores nothing."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.attachments.models import Attachment
from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
from platform_core.models import AuditLog, Membership, Role
from tests.agents.attachments import files
from tests.agents.attachments.conftest import stored_files
from tests.agents.factories import ConversationFactory, MessageFactory
from tests.factories import UserFactory, member_of

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u4e00-\u9fff]")


def url(org, attachment=None, action: str = "") -> str:
    base = f"/api/v1/orgs/{org.slug}/attachments/"
    if attachment is None:
        return base
    return f"{base}{attachment.pk}/" + (f"{action}/" if action else "")


def upload(client, org, *named: tuple[str, bytes], field: str = "files", **extra):
    uploads = [SimpleUploadedFile(name, content) for name, content in named]
    data = {field: uploads if field == "files" else uploads[0]}
    return client.post(url(org), data, format="multipart", **extra)


def stored(org, user, name: str = "notes.txt", data: bytes = b"Meeting notes.") -> Attachment:
    from django.core.files.base import ContentFile

    done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))
    assert isinstance(done, AttachmentStored), done
    return done.attachment


def sent(org, user, attachment: Attachment):
    conversation = ConversationFactory(organization=org, user=user)
    message = MessageFactory(conversation=conversation)
    attachments_bind(user=user, conversation=conversation, message=message, attachment_ids=[attachment.pk])
    attachment.refresh_from_db()
    return conversation


def body(response) -> bytes:
    return b"".join(response.streaming_content)


# --- upload -------------------------------------------------------------------------------------------------


def test_a_member_uploads_a_file_and_it_waits_to_be_sent(client_for, org, member, media_root):
    response = upload(client_for(member), org, ("screenshot.png", files.PNG), field="file")

    assert response.status_code == 201, response.content
    [line] = response.json()["files"]
    assert (line["file"], line["outcome"], line["code"]) == ("screenshot.png", "stored", "")
    attachment = line["attachment"]
    assert attachment["kind"] == "image" and attachment["format"] == "png"
    assert attachment["content_type"] == "image/png" and attachment["size"] == len(files.PNG)
    assert attachment["status"] == "pending" and attachment["conversation"] is None
    assert attachment["download_url"] == f"/api/v1/orgs/{org.slug}/attachments/{attachment['id']}/download/"
    row = Attachment.objects.for_org(org).get(pk=attachment["id"])
    assert row.uploaded_by == member and (media_root / row.file.name).read_bytes() == files.PNG
    assert AuditLog.objects.for_org(org).filter(action="attachment.upload", actor=member).count() == 1


def test_the_type_a_client_claims_is_ignored(client_for, org, member):
    lying = SimpleUploadedFile("page.png", files.PNG, content_type="text/html")
    response = client_for(member).post(url(org), {"file": lying}, format="multipart")
    assert response.json()["files"][0]["attachment"]["content_type"] == "image/png"


def test_several_files_are_each_answered_with_their_outcome(client_for, org, member, media_root):
    response = upload(
        client_for(member),
        org,
        ("contract.pdf", files.PDF),
        ("photo.png", files.JPEG),
        ("secret.pdf", files.pdf(password="pw")),
    )

    assert response.status_code == 201
    lines = response.json()["files"]
    assert [(line["file"], line["outcome"], line["code"]) for line in lines] == [
        ("contract.pdf", "stored", ""),
        ("photo.png", "refused", "extension_mismatch"),
        ("secret.pdf", "refused", "encrypted"),
    ]
    assert lines[1]["attachment"] is None and "png" in lines[1]["message"]
    assert "password" in lines[2]["message"]
    assert Attachment.objects.for_org(org).count() == 1 and len(stored_files(media_root)) == 1


def test_when_every_file_is_refused_the_answer_is_400_in_the_users_language(
    client_for, org, member, media_root
):
    response = upload(
        client_for(member),
        org,
        ("bomb.docx", files.zip_bomb_docx()),
        ("setup.exe", b"MZ" + b"\0" * 10),
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert response.status_code == 400
    lines = response.json()["files"]
    assert [line["code"] for line in lines] == ["compression_too_high", "unknown_format"]
    assert all(CJK.search(line["message"]) for line in lines), lines
    assert not Attachment.objects.for_org(org).exists() and stored_files(media_root) == []


def test_a_file_over_the_limit_is_dropped_while_the_request_is_read(
    client_for, org, member, media_root, settings
):
    settings.ATTACHMENT_MAX_FILE_BYTES = 1000
    response = upload(client_for(member), org, ("big.txt", b"x" * 5000), ("small.txt", b"fine"))

    assert response.status_code == 201
    outcomes = {line["file"]: (line["outcome"], line["code"]) for line in response.json()["files"]}
    assert outcomes == {"small.txt": ("stored", ""), "big.txt": ("refused", "too_large")}
    big = next(line for line in response.json()["files"] if line["file"] == "big.txt")
    assert "1000" in big["message"] or "1,000" in big["message"] or "1000 bytes" in big["message"]
    assert list(Attachment.objects.for_org(org).values_list("name", flat=True)) == ["small.txt"]


def test_a_request_without_a_file_is_a_field_error(client_for, org, member):
    response = client_for(member).post(url(org), {"note": "no file"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()


def _multipart(boundary: str, *parts: tuple[str, str, bytes], end: bool = True) -> bytes:
    chunks = []
    for field, name, data in parts:
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    if end:
        chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks)


def test_a_body_cut_off_in_its_last_file_stores_nothing_not_even_the_files_before_it(
    client_for, org, member, media_root
):
    boundary = "----attachment-test"
    whole = _multipart(
        boundary, ("files", "first.txt", b"A complete file."), ("files", "second.pdf", files.PDF)
    )
    cut = whole[: whole.index(b"%PDF") + 100]  # the second file's bytes stop halfway, no closing boundary

    response = client_for(member).generic(
        "POST", url(org), cut, content_type=f"multipart/form-data; boundary={boundary}"
    )

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "incomplete_upload"
    assert not Attachment.objects.for_org(org).exists() and stored_files(media_root) == []
    complete = client_for(member).generic(
        "POST", url(org), whole, content_type=f"multipart/form-data; boundary={boundary}"
    )
    assert complete.status_code == 201 and Attachment.objects.for_org(org).count() == 2


# --- reading, downloading, deleting -----------------------------------------------------------------------


def test_the_list_shows_the_callers_pending_uploads_and_their_conversations_attachments(
    client_for, org, member, django_assert_num_queries
):
    colleague = member_of(org, Role.MEMBER, username="colleague")
    pending = stored(org, member, "pending.txt")
    in_conversation = stored(org, member, "sent.txt")
    conversation = sent(org, member, in_conversation)
    stored(org, colleague, "theirs.txt")
    sent(org, colleague, stored(org, colleague, "their-sent.txt"))
    client = client_for(member)
    client.get(url(org))  # the key's first use writes its last-use rows

    with django_assert_num_queries(6) as few:
        listed = client.get(url(org)).json()
    assert {row["name"] for row in listed["results"]} == {"pending.txt", "sent.txt"}
    for n in range(5):
        stored(org, member, f"more-{n}.txt")
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get(url(org)).json()["count"] == 7

    assert [r["id"] for r in client.get(url(org), {"status": "bound"}).json()["results"]] == [
        str(in_conversation.pk)
    ]
    bound = client.get(url(org), {"conversation": str(conversation.pk)}).json()["results"]
    assert [(r["name"], r["status"], r["conversation"]) for r in bound] == [
        ("sent.txt", "bound", str(conversation.pk))
    ]
    assert str(pending.pk) in {r["id"] for r in client.get(url(org), {"status": "pending"}).json()["results"]}
    assert client.get(url(org), {"status": "lost"}).status_code == 400
    assert client.get(url(org), {"conversation": "nope"}).status_code == 400


def test_the_download_is_the_file_as_an_attachment_with_its_sniffed_type_and_is_audited(
    client_for, org, member
):
    attachment = stored(org, member, "报价单.csv", "供应商,金额\nACME,50000\n".encode())

    response = client_for(member).get(url(org, attachment, "download"), REMOTE_ADDR="127.0.0.1")

    assert response.status_code == 200
    assert body(response) == "供应商,金额\nACME,50000\n".encode()
    assert response["Content-Disposition"].startswith("attachment;")
    assert "filename*=utf-8''%E6%8A%A5%E4%BB%B7%E5%8D%95.csv" in response["Content-Disposition"]
    assert response["Content-Type"] == "text/csv"
    assert response["X-Content-Type-Options"] == "nosniff" and "no-store" in response["Cache-Control"]
    row = AuditLog.objects.for_org(org).get(action="attachment.download")
    assert row.actor == member and row.after["name"] == "报价单.csv" and "ACME" not in str(row.after)


def test_a_file_gone_from_the_storage_is_a_404_download(client_for, org, member, media_root):
    attachment = stored(org, member)
    (media_root / attachment.file.name).unlink()
    assert client_for(member).get(url(org, attachment, "download")).status_code == 404
    assert not AuditLog.objects.for_org(org).filter(action="attachment.download").exists()


def test_a_pending_upload_is_deleted_with_its_file_and_a_sent_one_is_refused(
    client_for, org, member, media_root, django_capture_on_commit_callbacks
):
    pending, kept = stored(org, member, "pending.txt"), stored(org, member, "sent.txt")
    sent(org, member, kept)
    client = client_for(member)

    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(url(org, pending)).status_code == 204
    response = client.delete(url(org, kept))

    assert response.status_code == 409 and "conversation" in response.json()["detail"]
    assert list(Attachment.objects.for_org(org).values_list("pk", flat=True)) == [kept.pk]
    assert stored_files(media_root) == [kept.file.name]


# --- who sees what -----------------------------------------------------------------------------------------

OWN_ROUTES = [("get", ""), ("get", "download"), ("delete", "")]


@pytest.mark.parametrize(("method", "action"), OWN_ROUTES)
def test_another_members_pending_upload_is_a_404_on_every_route(client_for, org, member, method, action):
    theirs = stored(org, member_of(org, Role.ADMIN, username="ada"), "theirs.txt")
    response = getattr(client_for(member), method)(url(org, theirs, action))
    assert response.status_code == 404 and b"theirs" not in response.content
    assert Attachment.objects.for_org(org).filter(pk=theirs.pk).exists()


@pytest.mark.parametrize(("method", "action"), OWN_ROUTES)
def test_an_attachment_of_another_users_conversation_is_a_404_even_for_an_owner(
    client_for, org, member, org_owner, method, action
):
    attachment = stored(org, member, "private.txt")
    sent(org, member, attachment)
    response = getattr(client_for(org_owner), method)(url(org, attachment, action))
    assert response.status_code == 404
    assert not client_for(org_owner).get(url(org)).json()["results"]


@pytest.mark.parametrize(
    ("method", "action"), [("get", ""), ("get", "download"), ("delete", ""), ("get", None)]
)
def test_a_former_member_sees_nothing_of_their_attachments(client_for, org, member, method, action):
    attachment = stored(org, member)
    client = client_for(member)
    Membership.objects.filter(user=member, organization=org).delete()
    target = url(org) if action is None else url(org, attachment, action)
    assert getattr(client, method)(target).status_code == 404
    assert upload(client, org, ("a.txt", b"a")).status_code == 404
    assert Attachment.objects.for_org(org).filter(pk=attachment.pk).exists()


def test_a_superuser_who_is_not_a_member_is_refused_like_anyone_else(api_client, org, member):
    attachment = stored(org, member)
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    api_client.force_authenticate(root)
    assert api_client.get(url(org)).status_code == 404
    assert api_client.get(url(org, attachment, "download")).status_code == 404
    assert upload(api_client, org, ("a.txt", b"a")).status_code == 404
    assert Attachment.objects.for_org(org).count() == 1


ROUTES = [("get", "list"), ("post", "list"), ("get", "detail"), ("delete", "detail"), ("get", "download")]


def _route(org, kind, attachment) -> str:
    return {"list": url(org), "detail": url(org, attachment), "download": url(org, attachment, "download")}[
        kind
    ]


@pytest.mark.cross_org("attachment-list", "attachment-detail", "attachment-download")
@pytest.mark.parametrize(("method", "kind"), ROUTES, ids=[f"{m}-{k}" for m, k in ROUTES])
def test_another_organisations_attachments_are_404_on_every_route(
    client_for, org, member, other_org, method, kind, media_root
):
    # The same person is a member of both: an attachment is still its organisation's only.
    outsider = member_of(other_org, Role.MEMBER, username="gus")
    foreign = stored(other_org, outsider, "globex-plan.txt")
    sent(other_org, outsider, foreign)
    foreign_pending = stored(other_org, outsider, "globex-draft.txt")
    own = stored(org, member, "acme.txt")
    client = client_for(member)

    if kind != "list":
        for target in (foreign, foreign_pending):
            response = getattr(client, method)(_route(org, kind, target), {}, format="json")
            assert response.status_code == 404 and b"globex" not in response.content
    response = getattr(client, method)(_route(other_org, kind, foreign), {}, format="json")
    assert response.status_code == 404 and b"globex" not in response.content
    response = getattr(client_for(outsider), method)(_route(org, kind, own), {}, format="json")
    assert response.status_code == 404 and b"acme" not in response.content

    if method == "get" and kind == "list":
        assert [row["name"] for row in client.get(url(org)).json()["results"]] == ["acme.txt"]
    assert Attachment.objects.for_org(other_org).count() == 2 and Attachment.objects.for_org(org).count() == 1
    assert len(stored_files(media_root)) == 3


# --- API keys -----------------------------------------------------------------------------------------------


def test_a_read_key_lists_and_downloads_but_cannot_upload_or_delete(key_client, org, member):
    attachment = stored(org, member)
    client = key_client(member, ["read"])

    assert client.get(url(org)).status_code == 200
    assert client.get(url(org, attachment, "download")).status_code == 200
    assert upload(client, org, ("a.txt", b"a")).status_code == 403
    assert client.delete(url(org, attachment)).status_code == 403
    assert Attachment.objects.for_org(org).count() == 1


def test_a_chat_key_uploads_and_deletes(key_client, org, member):
    client = key_client(member, ["chat"])
    response = upload(client, org, ("a.txt", b"a"))
    assert response.status_code == 201
    attachment_id = response.json()["files"][0]["attachment"]["id"]
    assert client.delete(f"{url(org)}{attachment_id}/").status_code == 204


def test_the_schema_documents_the_routes(client_for, member):
    schema = client_for(member).get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/orgs/{org_slug}/attachments/"])
    assert {"get", "delete"} <= set(paths["/api/v1/orgs/{org_slug}/attachments/{id}/"])
    assert "get" in paths["/api/v1/orgs/{org_slug}/attachments/{id}/download/"]
    post = paths["/api/v1/orgs/{org_slug}/attachments/"]["post"]
    assert "multipart/form-data" in post["requestBody"]["content"]
