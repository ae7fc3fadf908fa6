"""An upload cut off midway, sent over a raw socket to a real daphne server (``live_server_url``), leaves
nothing behind: not when the client disconnects in the middle of the body, not when the body ends before
its last file does, not even the complete files before it; the server goes on serving uploads."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from agents.attachments.models import Attachment
from platform_core.models import ApiKey, ApiKeyAddress, Role
from tests.agents.attachments import files
from tests.agents.attachments.conftest import stored_files
from tests.factories import OrganizationFactory, member_of

BOUNDARY = "----cut-off-upload"


def multipart(*parts: tuple[str, bytes]) -> bytes:
    chunks = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data in parts
    ]
    return b"".join(chunks) + f"--{BOUNDARY}--\r\n".encode()


def raw_post(
    base_url: str, path: str, token: str, body: bytes, *, content_length: int, hang_up: bool
) -> bytes:
    """Send the request's head and ``body`` (which may be shorter than ``content_length`` says); then hang
    up at once, or read the server's answer until it closes the connection."""
    parts = urlsplit(base_url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {content_length}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    answer = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as sock:
        sock.sendall(head + body)
        if hang_up:
            return answer
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.django_db(transaction=True)
def test_an_upload_cut_off_midway_leaves_nothing_behind(live_server_url, media_root):
    org = OrganizationFactory(slug="acme")
    user = member_of(org, Role.MEMBER, username="mia")
    raw = ApiKey.new_raw()
    key = ApiKey.objects.create(
        user=user, name="k", key_prefix=raw[:12], key_hash=ApiKey.hash_raw(raw), scopes=["read", "chat"]
    )
    ApiKeyAddress.objects.create(key=key, ip_address="127.0.0.1")
    path = f"/api/v1/orgs/{org.slug}/attachments/"
    whole = multipart(("first.txt", b"A complete first file."), ("contract.pdf", files.PDF))
    cut = whole[: whole.index(b"%PDF") + 200]

    # The client goes away in the middle of the second file: the server never gets the rest.
    raw_post(live_server_url.url, path, raw, cut, content_length=len(whole), hang_up=True)
    # The body ends where it was cut (its length says so): the last file never ended.
    truncated = raw_post(live_server_url.url, path, raw, cut, content_length=len(cut), hang_up=False)
    # A whole upload afterwards is stored: the server is fine, and was never left half-way.
    fine = multipart(("ok.txt", b"fine"))
    complete = raw_post(live_server_url.url, path, raw, fine, content_length=len(fine), hang_up=False)

    assert truncated.startswith(b"HTTP/1.1 400") and b"incomplete_upload" in truncated
    assert complete.startswith(b"HTTP/1.1 201"), complete[:300]
    assert list(Attachment.objects.for_org(org).values_list("name", flat=True)) == ["ok.txt"]
    assert [path.rsplit("/", 1)[-1] for path in stored_files(media_root)] == ["ok.txt"]
