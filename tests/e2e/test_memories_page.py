"""The Memories page in Debian's chromium: a member opens it from the top bar, sees what an agent
remembered about them and what they wrote, adds a memory, searches, changes one in place and deletes one
after confirming (a dismissed confirmation deletes nothing), all under the strict policy. The test saves
``docs/screenshots/memories.png``, which the user guide shows."""

from __future__ import annotations

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer
from tests.production.processes import ROOT

pytestmark = pytest.mark.e2e

SCREENSHOT = ROOT / "docs" / "screenshots" / "memories.png"
USERNAME = "remy"
AGENT = "Travel desk"
REMEMBERED = "Prefers a window seat on long flights"
WRITTEN = "Works in the purchasing team in Shanghai"


def build_memories_world() -> dict[str, str]:
    """``remy``, a member of acme, with a memory the agent "Travel desk" (memory on) kept in a conversation
    and one they wrote (run in a subprocess against the e2e server's database, through the services)."""
    from django.utils import timezone

    from agents.memory.models import Memory, MemoryOrigin
    from agents.memory.services import MemorySaved, memory_create
    from agents.models import Agent
    from platform_core.models import Organization, Role
    from tests.factories import member_of

    from tests.agents.factories import ConversationFactory  # isort: skip (after tests.factories)

    org = Organization.objects.get(slug="acme")
    user = member_of(org, Role.MEMBER, username=USERNAME)
    agent, _created = Agent.objects.unscoped().get_or_create(
        organization=org, name=AGENT, defaults={"memory": True, "completion_check": False}
    )
    conversation = ConversationFactory(organization=org, user=user, agent=agent, title="Booking a trip")
    remembered = memory_create(
        organization_id=org.pk,
        user_id=user.pk,
        text=REMEMBERED,
        origin=MemoryOrigin.AGENT,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
    )
    assert isinstance(remembered, MemorySaved), remembered
    # A later run of the agent was given it.
    Memory.objects.for_org(org).filter(pk=remembered.memory.pk).update(recalled_at=timezone.now())
    memory_create(organization_id=org.pk, user_id=user.pk, text=WRITTEN, actor=user)
    return {"user": str(user.pk), "conversation": str(conversation.pk)}


def _texts_in_database(server: E2EServer, user_id: str) -> list[str]:
    rows = server.query("SELECT text FROM agents_memory WHERE user_id = ? ORDER BY text", (int(user_id),))
    return [row[0] for row in rows]


def test_a_member_adds_searches_edits_and_deletes_their_memories(signed_in_page, e2e_server):
    world = e2e_server.build("tests.e2e.test_memories_page:build_memories_world")
    page, errors = signed_in_page(USERNAME, next="/o/acme/chat/", width=1100, height=900)

    # The top bar leads to the page, which lists both memories with who wrote them.
    page.get_by_role("link", name="Memories", exact=True).click()
    page.wait_for_url("**/o/acme/memories/")
    cards = page.locator("li.memory")
    expect(cards).to_have_count(2)
    agents_card = cards.filter(has_text=REMEMBERED)
    expect(agents_card.locator(".memory-meta")).to_contain_text(f"Remembered by {AGENT}")
    expect(agents_card.get_by_role("link", name="in this conversation")).to_have_attribute(
        "href", f"/o/acme/chat/{world['conversation']}/"
    )
    expect(agents_card.locator(".memory-recalled")).to_contain_text("last given to a model")
    expect(cards.filter(has_text=WRITTEN).locator(".memory-meta")).to_contain_text("Written by you")
    expect(cards.filter(has_text=WRITTEN).locator(".memory-recalled")).to_have_text(
        "not given to a model yet"
    )

    # Add one: it comes first.
    page.get_by_label("New memory").fill("Answer me in short bullet points")
    page.get_by_role("button", name="Remember this").click()
    expect(page.locator(".messages")).to_contain_text("Memory saved.")
    expect(cards).to_have_count(3)
    expect(cards.first.locator(".memory-text")).to_have_text("Answer me in short bullet points")

    # Search: only what contains the words.
    page.get_by_role("searchbox", name="Search your memories").fill("shanghai")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(cards).to_have_count(1)
    expect(cards.first.locator(".memory-text")).to_have_text(WRITTEN)
    page.get_by_role("link", name="Show all").click()
    expect(cards).to_have_count(3)

    # Edit in place: the agent's memory, corrected.
    agents_card.locator("summary", has_text="Edit").click()
    field = agents_card.locator("textarea")
    expect(field).to_be_visible()
    field.fill("Prefers an aisle seat on long flights")
    agents_card.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Memory changed.")
    corrected = cards.filter(has_text="Prefers an aisle seat on long flights")
    expect(corrected).to_have_count(1)
    expect(corrected.locator(".memory-meta")).to_contain_text(f"Remembered by {AGENT}")
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # Delete: a dismissed confirmation deletes nothing, an accepted one deletes it.
    questions: list[str] = []

    def answer(accept: bool):
        def handle(dialog) -> None:
            questions.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return handle

    page.once("dialog", answer(False))
    corrected.get_by_role("button", name="Delete").click()
    expect(cards).to_have_count(3)
    page.once("dialog", answer(True))
    corrected.get_by_role("button", name="Delete").click()
    expect(page.locator(".messages")).to_contain_text("Memory deleted: no agent will be given it again.")
    expect(cards).to_have_count(2)
    assert questions == ["Delete this memory? No agent will be given it again."] * 2
    assert _texts_in_database(e2e_server, world["user"]) == [
        "Answer me in short bullet points",
        WRITTEN,
    ]
    assert errors == []


def test_the_page_explains_memories_when_there_are_none_in_chinese(signed_in_page, e2e_server):
    e2e_server.build("tests.e2e.test_memories_page:build_empty_member")
    page, errors = signed_in_page("nell", next="/o/acme/memories/", locale="zh-CN")
    expect(page.get_by_role("heading", name="你的记忆")).to_be_visible()
    expect(page.locator(".memory-empty")).to_contain_text("管理员开启了记忆的智能体")
    expect(page.locator("li.memory")).to_have_count(0)
    assert errors == []


def build_empty_member() -> dict[str, str]:
    from platform_core.models import Organization, Role
    from tests.factories import member_of

    user = member_of(Organization.objects.get(slug="acme"), Role.MEMBER, username="nell")
    return {"user": str(user.pk)}
