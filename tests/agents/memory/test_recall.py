"""Which memories reach a prompt: all while they fit; past the budget the relevant ones first (Chinese
as well as English), then the newest; each marked as given to a model."""

from __future__ import annotations

import pytest

from agents.memory.limits import MAX_RECALLED
from agents.memory.models import Memory
from agents.memory.recall import memories_rank, memory_recall
from agents.memory.services import memory_create
from platform_core.models import Role
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db


def keep(org, person, *texts: str) -> None:
    for text in texts:
        memory_create(organization_id=org.pk, user_id=person.pk, text=text)


def test_memories_that_fit_are_all_given_newest_first():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    keep(org, person, "Prefers short answers.", "Works in the Shanghai office.")

    recalled = memory_recall(organization_id=org.pk, user_id=person.pk, query="unrelated question")

    assert [m.text for m in recalled.memories] == ["Works in the Shanghai office.", "Prefers short answers."]
    assert recalled.kept == 2
    assert Memory.objects.for_org(org).filter(recalled_at__isnull=False).count() == 2


def test_past_the_budget_the_relevant_memories_come_first():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    keep(org, person, "Approves purchases above 50,000 CNY for the finance team.")
    keep(org, person, *[f"Filler memory number {n} about something else entirely." for n in range(40)])

    recalled = memory_recall(
        organization_id=org.pk, user_id=person.pk, query="Who approves my purchases?", budget_tokens=60
    )

    assert recalled.memories[0].text == "Approves purchases above 50,000 CNY for the finance team."
    assert 1 < len(recalled.memories) < 41 and recalled.kept == 41


def test_chinese_memories_are_ranked_by_their_words():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    keep(org, person, "我负责上海财务部的报销审批。", *[f"喜欢第{n}种咖啡。" for n in range(30)])

    recalled = memory_recall(
        organization_id=org.pk, user_id=person.pk, query="报销审批由谁负责？", budget_tokens=30
    )

    assert recalled.memories[0].text == "我负责上海财务部的报销审批。"


def test_no_more_than_the_cap_reach_one_prompt_however_short():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    keep(org, person, *[f"Fact {n}." for n in range(MAX_RECALLED + 5)])

    recalled = memory_recall(organization_id=org.pk, user_id=person.pk, query="x", budget_tokens=10_000)

    assert len(recalled.memories) == MAX_RECALLED


def test_another_persons_memories_are_never_recalled():
    org = OrganizationFactory()
    alice, bob = member_of(org, Role.MEMBER), member_of(org, Role.MEMBER)
    keep(org, bob, "Bob's salary is confidential.")

    assert memory_recall(organization_id=org.pk, user_id=alice.pk, query="salary").memories == ()


def test_the_rank_leaves_out_memories_without_a_word_of_the_question():
    terms = ["coffe morn", "approv purchas financ", "purchas order", "purchasing"]

    assert memories_rank("Who approves purchases?", terms) == [1, 2]
