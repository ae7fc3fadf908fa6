"""A document's file is downloaded, through the REST API or the chat's citation link, by the people who may
read its knowledge base and by nobody else: the file's bytes as an attachment under its own name, never
rendered by the browser; a 404 for anyone else, whether the document exists or not."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from platform_core.models import ApiKey, ApiKeyAddress, Role
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


def api_url(org, document) -> str:
    return f"/api/v1/orgs/{org.slug}/knowledge-bases/{document.knowledge_base_id}/documents/{document.pk}/download/"


def page_url(org, document) -> str:
    return reverse("knowledge-document-file", kwargs={"org_slug": org.slug, "document_id": document.pk})


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def signed_in(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_api_download_is_the_file_as_an_attachment_under_its_own_name(client_for, org, org_admin, member):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "采购政策.md", POLICY_ZH)

    response = client_for(member).get(api_url(org, document))

    assert response.status_code == 200
    assert body(response) == POLICY_ZH.encode()
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=utf-8''%E9%87%87%E8%B4%AD%E6%94%BF%E7%AD%96.md" in disposition
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Type"].startswith("text/markdown")
    assert response["Content-Length"] == str(len(POLICY_ZH.encode()))
    assert "no-store" in response["Cache-Control"]


def test_the_api_download_answers_a_client_that_accepts_only_the_file_type(
    client_for, org, org_admin, member
):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    client = client_for(member)

    assert client.get(api_url(org, document), HTTP_ACCEPT="text/markdown").status_code == 200
    restricted = knowledge_base_with(org, org_admin, name="board", restricted=True, members=[org_admin])
    hidden = indexed(restricted, "minutes.md", POLICY_EN)
    missing = client.get(api_url(org, hidden), HTTP_ACCEPT="text/markdown")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"


def test_a_document_whose_stored_file_is_gone_is_404_not_500(client_for, org, org_admin, member, client):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    document.file.storage.delete(document.file.name)

    assert client_for(member).get(api_url(org, document)).status_code == 404
    assert signed_in(client, member).get(page_url(org, document)).status_code == 404


@pytest.mark.cross_org("knowledge-document-file")
def test_the_citation_link_serves_readers_and_is_404_for_everyone_else(
    client, org, org_admin, member, other_admin
):
    outsider = member_of(org, Role.MEMBER, username="otto")
    knowledge_base = knowledge_base_with(org, org_admin, name="shared", restricted=True, members=[member])
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    url = page_url(org, document)

    reader = signed_in(client, member).get(url)
    assert reader.status_code == 200 and body(reader) == POLICY_EN.encode()
    assert reader["Content-Disposition"] == 'attachment; filename="policy.md"'
    assert reader["X-Content-Type-Options"] == "nosniff"

    for user in (outsider, org_admin, other_admin):  # not a member of it; another organisation's admin
        client.logout()
        response = signed_in(client, user).get(url)
        assert response.status_code == 404, user.username
        assert b"policy.md" not in response.content and POLICY_EN.encode()[:20] not in response.content
    # Through another organisation's slug, the document of this one is missing there too.
    client.logout()
    assert (
        signed_in(client, other_admin).get(page_url(org, document).replace(org.slug, "globex")).status_code
        == 404
    )


def test_the_citation_link_sends_a_signed_out_visitor_to_sign_in(client, org, org_admin):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)

    response = client.get(page_url(org, document))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_citation_link_takes_an_api_key_with_the_read_scope_only(client, org, org_admin, member):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)

    def key(scopes):
        raw = ApiKey.new_raw()
        made = ApiKey.objects.create(
            user=member,
            name=f"key-{'-'.join(scopes)}",
            key_prefix=raw[:12],
            key_hash=ApiKey.hash_raw(raw),
            scopes=scopes,
            last_used_ip="127.0.0.1",
        )
        ApiKeyAddress.objects.create(key=made, ip_address="127.0.0.1")
        return f"Bearer {raw}"

    url = page_url(org, document)
    allowed = client.get(url, HTTP_AUTHORIZATION=key(["read"]))
    assert allowed.status_code == 200 and body(allowed) == POLICY_EN.encode()
    assert client.get(url, HTTP_AUTHORIZATION=key(["chat"])).status_code == 403


def test_a_download_of_a_random_id_is_the_same_404_as_a_hidden_document(client, org, org_admin, member):
    restricted = knowledge_base_with(org, org_admin, restricted=True, members=[org_admin])
    hidden = indexed(restricted, "minutes.md", POLICY_EN)
    signed_in(client, member)

    hidden_response = client.get(page_url(org, hidden))
    missing = client.get(
        reverse(
            "knowledge-document-file",
            kwargs={"org_slug": org.slug, "document_id": "00000000-0000-0000-0000-000000000001"},
        )
    )

    assert hidden_response.status_code == missing.status_code == 404
    assert _without_tokens(hidden_response.content) == _without_tokens(missing.content)


def _without_tokens(page: bytes) -> bytes:
    """The page without what differs on every request (the CSP nonce, the sign-out form's CSRF token)."""
    return re.sub(rb'(nonce|value)="[^"]*"', b"", page)
