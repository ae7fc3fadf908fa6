"""The Memories page: every member sees, searches, adds, changes and deletes their own memories in the
organisation (through the services, audited without the text); another person's memory, of the same
organisation or of another, is a 404 on every route and changes nothing; the forms need the CSRF token;
the top bar links the page; the page speaks Chinese."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.memory.models import Memory
from agents.memory.recall import memory_recall
from platform_core.models import AuditLog, Membership, Role
from tests.agents.memory.helpers import kept
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


def page_url(org, action: str = "", memory=None) -> str:
    base = f"/o/{org.slug}/memories/"
    if memory is not None:
        return f"{base}{memory.pk}/{action}/"
    return f"{base}{action}/" if action else base


@pytest.fixture
def signed_in(client, member):
    assert client.login(username=member.username, password=PASSWORD)
    return client


def test_a_member_sees_their_memories_with_who_wrote_them_and_when(signed_in, org, member):
    by_agent = kept(org, member, "Works in the purchasing team", by_agent="Buyer")
    kept(org, member, "Answers in short bullet points")
    noted = kept(org, member, "Travels to Berlin every month", by_agent="Planner", origin="extracted")
    Memory.objects.for_org(org).filter(pk=by_agent.pk).update(recalled_at=by_agent.created_at)

    response = signed_in.get(page_url(org))

    assert response.status_code == 200
    body = response.content.decode()
    assert body.index("Answers in short bullet points") < body.index("Works in the purchasing team")
    assert "Remembered by Buyer" in body and "Written by you" in body
    assert "Noted by Planner after an answer" in body and "Remembered by Planner" not in body
    assert f"/o/{org.slug}/chat/{noted.conversation_id}/" in body
    assert f"/o/{org.slug}/chat/{by_agent.conversation_id}/" in body
    assert "last given to a model" in body and "not given to a model yet" in body
    assert 'aria-current="page">Memories</a>' in body


def test_the_page_costs_the_same_queries_however_many_memories(signed_in, org, member):
    kept(org, member, "First fact", by_agent="Buyer")
    with CaptureQueriesContext(connection) as one:
        signed_in.get(page_url(org))
    for n in range(5):
        kept(org, member, f"Fact {n}", by_agent=f"Agent {n}")
    with CaptureQueriesContext(connection) as six:
        assert signed_in.get(page_url(org)).content.decode().count('class="card memory"') == 6
    assert len(six) == len(one)


def test_with_no_memories_the_page_says_what_they_are(signed_in, org):
    body = signed_in.get(page_url(org)).content.decode()
    assert "No memories yet" in body
    assert "Agents whose memory an administrator switched on remember what you ask them to" in body
    assert 'role="search"' not in body


def test_search_shows_the_memories_that_contain_every_word(signed_in, org, member):
    kept(org, member, "Works in the purchasing team in Berlin")
    kept(org, member, "Likes green tea")

    body = signed_in.get(page_url(org), {"q": "berlin PURCHASING"}).content.decode()
    assert "Works in the purchasing team in Berlin" in body and "Likes green tea" not in body

    nothing = signed_in.get(page_url(org), {"q": "coffee"}).content.decode()
    assert "No memory contains “coffee”." in nothing and "No memories yet" not in nothing


def test_a_member_adds_a_memory_and_it_is_audited_without_the_text(signed_in, org, member):
    response = signed_in.post(page_url(org, "add"), {"text": "  Prefers invoices in euros  "}, follow=True)

    assert response.status_code == 200
    memory = Memory.objects.for_org(org).get()
    assert (memory.user, memory.text, memory.origin) == (member, "Prefers invoices in euros", "person")
    body = response.content.decode()
    assert "Memory saved." in body and "Prefers invoices in euros" in body
    row = AuditLog.objects.for_org(org).get(action="memory.created")
    assert row.actor == member and "euros" not in json.dumps([row.before, row.after, row.target_repr])


@pytest.mark.parametrize("text", ["", "   ", "x" * 501])
def test_an_empty_or_too_long_memory_is_refused_with_the_reason(signed_in, org, text):
    response = signed_in.post(page_url(org, "add"), {"text": text})
    assert response.status_code == 400
    assert 'class="error" role="alert"' in response.content.decode()
    assert not Memory.objects.for_org(org).exists()


def test_a_member_changes_a_memory_and_comes_back_to_their_search(signed_in, org, member):
    memory = kept(org, member, "Prefers invoices in euros", by_agent="Buyer")

    response = signed_in.post(
        page_url(org, "edit", memory), {"text": "Prefers invoices in dollars", "q": "invoices"}
    )

    assert response.status_code == 302 and response["Location"] == f"{page_url(org)}?q=invoices"
    memory.refresh_from_db()
    assert memory.text == "Prefers invoices in dollars" and memory.origin == "agent"
    row = AuditLog.objects.for_org(org).get(action="memory.updated")
    assert "dollars" not in json.dumps([row.before, row.after, row.target_repr])
    assert "Memory changed." in signed_in.get(response["Location"]).content.decode()


def test_a_change_to_an_empty_text_says_why_and_changes_nothing(signed_in, org, member):
    memory = kept(org, member, "Prefers invoices in euros")
    response = signed_in.post(page_url(org, "edit", memory), {"text": "  "}, follow=True)
    assert response.status_code == 200 and 'class="error"' in response.content.decode()
    memory.refresh_from_db()
    assert memory.text == "Prefers invoices in euros"


def test_a_member_deletes_a_memory_and_no_model_is_given_it_again(signed_in, org, member):
    memory = kept(org, member, "Prefers invoices in euros", by_agent="Buyer")
    conversation_id = memory.conversation_id

    response = signed_in.post(page_url(org, "delete", memory), follow=True)

    assert response.status_code == 200
    assert "Memory deleted: no agent will be given it again." in response.content.decode()
    assert not Memory.objects.for_org(org).exists()
    assert memory_recall(organization_id=org.pk, user_id=member.pk, query="invoices").memories == ()
    # The conversation it was remembered in keeps its messages.
    from agents.models import Conversation

    assert Conversation.objects.for_org(org).filter(pk=conversation_id).exists()
    row = AuditLog.objects.for_org(org).get(action="memory.deleted")
    assert row.actor == member and "euros" not in json.dumps([row.before, row.after, row.target_repr])


def test_the_forms_need_the_csrf_token(org, member):
    memory = kept(org, member, "Prefers invoices in euros")
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=member.username, password=PASSWORD)

    assert client.post(page_url(org, "add"), {"text": "Forged"}).status_code == 403
    assert client.post(page_url(org, "edit", memory), {"text": "Forged"}).status_code == 403
    assert client.post(page_url(org, "delete", memory)).status_code == 403
    memory.refresh_from_db()
    assert memory.text == "Prefers invoices in euros" and Memory.objects.for_org(org).count() == 1


def test_writes_are_posts_only(signed_in, org, member):
    memory = kept(org, member, "Prefers invoices in euros")
    assert signed_in.get(page_url(org, "add")).status_code == 405
    assert signed_in.get(page_url(org, "delete", memory)).status_code == 405
    assert Memory.objects.for_org(org).count() == 1


def test_signed_out_visitors_are_sent_to_sign_in(client, org):
    response = client.get(page_url(org))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.cross_org("memories-page", "memories-add", "memories-edit", "memories-delete")
def test_another_persons_or_organisations_memories_are_404_and_unchanged(signed_in, org, other_org, member):
    # Given a colleague's memory here, and the member's own memory in another organisation
    colleague = member_of(org, Role.OWNER, username="carol")
    theirs = kept(org, colleague, "Carol's secret: globex merger")
    Membership.objects.create(organization=other_org, user=member, role=Role.MEMBER)
    elsewhere = kept(other_org, member, "Mia at globex: merger")

    # Then the member's page lists neither
    body = signed_in.get(page_url(org)).content.decode()
    assert "merger" not in body
    # And every write to them through this organisation's routes is a 404
    for target in (theirs, elsewhere):
        assert signed_in.post(page_url(org, "edit", target), {"text": "Overwritten"}).status_code == 404
        assert signed_in.post(page_url(org, "delete", target)).status_code == 404
    # And an outsider of the organisation reaches none of its routes
    outsider = Client()
    assert outsider.login(
        username=member_of(other_org, Role.OWNER, username="gus").username, password=PASSWORD
    )
    assert outsider.get(page_url(org)).status_code == 404
    assert outsider.post(page_url(org, "add"), {"text": "Planted"}).status_code == 404
    assert outsider.post(page_url(org, "edit", theirs), {"text": "Overwritten"}).status_code == 404
    assert outsider.post(page_url(org, "delete", theirs)).status_code == 404
    # And nothing changed
    theirs.refresh_from_db()
    elsewhere.refresh_from_db()
    assert (theirs.text, elsewhere.text) == ("Carol's secret: globex merger", "Mia at globex: merger")
    assert Memory.objects.for_org(org).count() == 1 and Memory.objects.for_org(other_org).count() == 1


def test_the_top_bar_links_every_member_to_their_memories(client, org):
    approver = member_of(org, Role.APPROVER, username="april")
    assert client.login(username=approver.username, password=PASSWORD)
    body = client.get(f"/o/{org.slug}/chat/").content.decode()
    assert f'href="/o/{org.slug}/memories/"' in body


def test_the_page_speaks_chinese(signed_in, org, member):
    kept(org, member, "Answers in short bullet points")
    body = signed_in.get(page_url(org), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "你的记忆" in body and "由你填写" in body
