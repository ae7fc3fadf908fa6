"""The memories' REST API: a member lists (newest first, searched), reads, writes, changes and deletes
their own memories in the organisation, each write audited without the text; another person's memory, of
the same organisation or of another, is a 404 on every route and changes nothing; API keys are held to
their scopes (``read`` reads, ``chat`` writes); a deleted memory is gone, and no model is given it again."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.memory.limits import TEXT_MAX_CHARS
from agents.memory.models import Memory
from agents.memory.recall import memory_recall
from platform_core.models import AuditLog, Role
from tests.agents.memory.helpers import kept
from tests.factories import member_of

pytestmark = pytest.mark.django_db

SECRET = "Prefers invoices in euros, cost centre 4711"


def url(org, memory=None) -> str:
    base = f"/api/v1/orgs/{org.slug}/memories/"
    return base if memory is None else f"{base}{memory.pk}/"


def audit_rows_hold_no_text(org, *texts: str) -> None:
    for row in AuditLog.objects.for_org(org).filter(action__startswith="memory."):
        written = json.dumps([row.before, row.after, row.target_repr], ensure_ascii=False)
        for text in texts:
            assert text not in written, (row.action, written)
        for word in ("euros", "4711", "Dollars"):
            assert word not in written, (row.action, written)


# --- list, read ---------------------------------------------------------------------------------------------


def test_a_member_lists_their_memories_newest_first_with_who_wrote_them(
    client_for, org, member, django_assert_num_queries
):
    first = kept(org, member, "Works in the purchasing team", by_agent="Buyer")
    second = kept(org, member, "Answers in short bullet points")
    client = client_for(member)

    response = client.get(url(org))

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["id"] for row in rows] == [str(second.pk), str(first.pk)]
    assert rows[0]["origin"] == "person" and rows[0]["agent_name"] is None
    assert rows[1]["origin"] == "agent" and rows[1]["agent_name"] == "Buyer"
    assert rows[1]["conversation"] == str(first.conversation_id) and rows[1]["recalled_at"] is None
    # The list costs the same queries however many memories (their agents come with them).
    with CaptureQueriesContext(connection) as two:
        client.get(url(org))
    for n in range(3):
        kept(org, member, f"Fact number {n}", by_agent=f"Agent {n}", origin=["agent", "extracted"][n % 2])
    with django_assert_num_queries(len(two)):
        rows = client.get(url(org)).json()["results"]
    assert len(rows) == 5 and {row["origin"] for row in rows} == {"agent", "extracted", "person"}


def test_search_finds_memories_by_every_word_in_any_case(client_for, org, member):
    kept(org, member, "Works in the purchasing team in Berlin")
    kept(org, member, "Likes green tea")
    client = client_for(member)

    def found(query: str) -> list[str]:
        return [row["text"] for row in client.get(url(org), {"search": query}).json()["results"]]

    assert found("BERLIN purchasing") == ["Works in the purchasing team in Berlin"]
    assert found("Green") == ["Likes green tea"]
    assert found("tea") == ["Likes green tea", "Works in the purchasing team in Berlin"]
    assert found("coffee") == []
    assert len(found("")) == 2


def test_a_member_reads_one_memory(client_for, org, member):
    memory = kept(org, member, SECRET)
    response = client_for(member).get(url(org, memory))
    assert response.status_code == 200 and response.json()["text"] == SECRET


# --- write, change, delete ----------------------------------------------------------------------------------


def test_a_member_writes_a_memory_of_their_own_and_it_is_audited_without_the_text(client_for, org, member):
    response = client_for(member).post(url(org), {"text": f"  {SECRET}  "}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["text"] == SECRET and body["origin"] == "person" and body["agent"] is None
    memory = Memory.objects.for_org(org).get(pk=body["id"])
    assert memory.user == member
    row = AuditLog.objects.for_org(org).get(action="memory.created")
    assert row.actor == member and row.after["length"] == len(SECRET) and row.ip_address == "127.0.0.1"
    audit_rows_hold_no_text(org, SECRET)


def test_writing_a_text_already_kept_answers_the_memory_kept(client_for, org, member):
    memory = kept(org, member, SECRET)
    response = client_for(member).post(url(org), {"text": SECRET}, format="json")
    assert response.status_code == 200 and response.json()["id"] == str(memory.pk)
    assert Memory.objects.for_org(org).count() == 1


@pytest.mark.parametrize("text", ["", "   ", "x" * (TEXT_MAX_CHARS + 1)])
def test_an_empty_or_too_long_text_is_a_400_and_keeps_nothing(client_for, org, member, text):
    response = client_for(member).post(url(org), {"text": text}, format="json")
    assert response.status_code == 400 and "text" in response.json()
    assert not Memory.objects.for_org(org).exists()


def test_the_refusal_speaks_the_members_language(client_for, org, member):
    memory = kept(org, member, SECRET)
    response = client_for(member).patch(
        url(org, memory), {"text": "x" * (TEXT_MAX_CHARS + 1)}, format="json", HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    assert response.status_code == 400
    assert any("\u4e00" <= char <= "\u9fff" for char in response.json()["text"][0])


def test_a_member_changes_a_memory_and_the_audit_row_holds_no_text(client_for, org, member):
    memory = kept(org, member, SECRET, by_agent="Buyer")
    changed = "Prefers invoices in Dollars"

    response = client_for(member).patch(url(org, memory), {"text": changed}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["text"] == changed and response.json()["origin"] == "agent"
    memory.refresh_from_db()
    assert memory.text == changed
    row = AuditLog.objects.for_org(org).get(action="memory.updated")
    assert row.actor == member
    assert (row.before["length"], row.after["length"]) == (len(SECRET), len(changed))
    audit_rows_hold_no_text(org, SECRET, changed)


def test_a_member_deletes_a_memory_it_is_gone_and_no_model_is_given_it(client_for, org, member):
    memory = kept(org, member, SECRET, by_agent="Buyer")
    other = kept(org, member, "Likes tea")
    client = client_for(member)

    response = client.delete(url(org, memory))

    assert response.status_code == 204
    assert not Memory.objects.for_org(org).filter(pk=memory.pk).exists()
    assert client.get(url(org, memory)).status_code == 404
    assert [row["id"] for row in client.get(url(org)).json()["results"]] == [str(other.pk)]
    recalled = memory_recall(organization_id=org.pk, user_id=member.pk, query="invoices euros")
    assert recalled.ids == [other.pk]
    row = AuditLog.objects.for_org(org).get(action="memory.deleted")
    assert row.actor == member and row.before["reason"] == "person" and row.target_id == str(memory.pk)
    audit_rows_hold_no_text(org, SECRET)


# --- isolation ----------------------------------------------------------------------------------------------

ROUTES = [("get", "list"), ("post", "list"), ("get", "detail"), ("patch", "detail"), ("delete", "detail")]


@pytest.mark.cross_org("memory-list", "memory-detail")
@pytest.mark.parametrize(("method", "kind"), ROUTES, ids=[f"{m}-{k}" for m, k in ROUTES])
def test_another_persons_or_organisations_memories_are_404_on_every_route(
    client_for, org, other_org, member, method, kind
):
    # Given a colleague's memory in the same organisation, and the member's own memory in another one
    colleague = member_of(org, Role.ADMIN, username="carol")
    theirs = kept(org, colleague, "Carol's secret: globex merger")
    member_of_both = member_of(other_org, Role.MEMBER, username=member.username)
    assert member_of_both == member
    elsewhere = kept(other_org, member, "Mia at globex: merger")
    own = kept(org, member, "Mia at acme")
    client = client_for(member)
    payload = {"text": "Overwritten by someone else"}

    # When the member reaches for them through the organisation's routes
    if kind == "detail":
        for target in (theirs, elsewhere):
            response = getattr(client, method)(url(org, target), payload, format="json")
            # Then each is the 404 of a missing memory
            assert response.status_code == 404 and b"merger" not in response.content
    # A colleague (an admin) cannot reach the member's memory either
    response = getattr(client_for(colleague), method)(
        url(org, own) if kind == "detail" else url(org), payload, format="json"
    )
    if kind == "detail":
        assert response.status_code == 404 and b"Mia" not in response.content
    elif method == "get":
        assert [row["text"] for row in response.json()["results"]] == ["Carol's secret: globex merger"]
    # A member of the other organisation only does not reach this one's at all
    outsider = member_of(other_org, Role.OWNER, username="gus")
    response = getattr(client_for(outsider), method)(
        url(org, own) if kind == "detail" else url(org), payload, format="json"
    )
    assert response.status_code == 404 and b"Mia" not in response.content

    if method == "get" and kind == "list":
        assert [row["text"] for row in client.get(url(org)).json()["results"]] == ["Mia at acme"]
    # And nothing of theirs changed
    theirs.refresh_from_db()
    elsewhere.refresh_from_db()
    own.refresh_from_db()
    assert (theirs.text, elsewhere.text) == ("Carol's secret: globex merger", "Mia at globex: merger")
    assert own.text == "Mia at acme"


def test_a_superuser_who_is_no_member_sees_no_memories(client_for, org, member):
    from tests.factories import UserFactory

    kept(org, member, SECRET)
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    assert client_for(root).get(url(org)).status_code == 404


# --- API keys -----------------------------------------------------------------------------------------------


def test_a_read_key_reads_but_cannot_write_change_or_delete(key_client, org, member):
    memory = kept(org, member, SECRET)
    client = key_client(member, ["read"])

    assert client.get(url(org)).status_code == 200
    assert client.get(url(org, memory)).status_code == 200
    assert client.post(url(org), {"text": "New"}, format="json").status_code == 403
    assert client.patch(url(org, memory), {"text": "Changed"}, format="json").status_code == 403
    assert client.delete(url(org, memory)).status_code == 403
    memory.refresh_from_db()
    assert memory.text == SECRET and Memory.objects.for_org(org).count() == 1


def test_a_chat_key_writes_changes_and_deletes(key_client, org, member):
    client = key_client(member, ["chat"])
    created = client.post(url(org), {"text": "New"}, format="json")
    assert created.status_code == 201
    memory_url = f"{url(org)}{created.json()['id']}/"
    assert client.patch(memory_url, {"text": "Changed"}, format="json").status_code == 200
    assert client.delete(memory_url).status_code == 204
    assert not Memory.objects.for_org(org).exists()


def test_the_schema_documents_the_routes(client_for, member):
    schema = client_for(member).get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/orgs/{org_slug}/memories/"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/orgs/{org_slug}/memories/{id}/"])
    assert "put" not in paths["/api/v1/orgs/{org_slug}/memories/{id}/"]
    parameters = {p["name"] for p in paths["/api/v1/orgs/{org_slug}/memories/"]["get"]["parameters"]}
    assert {"search", "limit", "offset"} <= parameters
