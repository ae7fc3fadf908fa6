"""Example questions: admins set them per agent (admin and API, validated); the chat offers them; the
demo agent ships with questions the offline demo model answers well."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent
from tests.agents.admin_form import agent_admin_form
from tests.agents.factories import AgentFactory
from tests.agents.test_demo_phrasings import PHRASINGS, PLAN_QUESTION
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

QUESTIONS = ["Which purchase orders are still drafts?", "Pay 18,600 CNY for purchase order PO-0001"]


def base(org):
    return f"/api/v1/orgs/{org.slug}"


def test_an_admin_sets_example_questions_through_the_api_and_members_read_them(
    client_for, org_admin, member, org
):
    agent = AgentFactory(organization=org)

    response = client_for(org_admin).patch(
        f"{base(org)}/agents/{agent.pk}/",
        {"example_questions": ["  Which orders are drafts? "]},
        format="json",
    )

    assert response.status_code == 200, response.content
    agent.refresh_from_db()
    assert agent.example_questions == ["Which orders are drafts?"]
    listed = client_for(member).get(f"{base(org)}/agents/").json()["results"]
    assert listed[0]["example_questions"] == ["Which orders are drafts?"]


BAD_LISTS = [
    (["q"] * 9, "at most 8"),
    (["x" * 201], "200"),
    ([""], "blank"),
    ([42], "string"),
    ("Which orders?", "list"),
    (["Same", "same "], "twice"),
]


@pytest.mark.parametrize(("value", "says"), BAD_LISTS)
def test_the_api_refuses_bad_example_questions_with_a_clear_error_and_changes_nothing(
    client_for, org_admin, org, value, says
):
    agent = AgentFactory(organization=org, example_questions=["Kept"])

    response = client_for(org_admin).patch(
        f"{base(org)}/agents/{agent.pk}/", {"example_questions": value}, format="json"
    )

    assert response.status_code == 400
    assert says in str(response.json()["example_questions"]).lower()
    agent.refresh_from_db()
    assert agent.example_questions == ["Kept"]


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_the_admin_takes_example_questions_one_per_line(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_agent_add"),
        agent_admin_form(org, example_questions="First question?\r\n\r\n  Second one  \r\n"),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Agent.objects.unscoped().get(name="Buyer").example_questions == ["First question?", "Second one"]
    page = admin_client.get(
        reverse("admin:agents_agent_change", args=[Agent.objects.unscoped().get(name="Buyer").pk])
    )
    assert "First question?\nSecond one</textarea>" in page.content.decode()


def test_the_admin_refuses_too_many_or_too_long_example_questions(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_agent_add"),
        agent_admin_form(org, example_questions="\n".join(f"q{i}" for i in range(9))),
    )
    assert response.status_code == 200
    assert "example_questions" in response.context["adminform"].form.errors
    response = admin_client.post(
        reverse("admin:agents_agent_add"), agent_admin_form(org, example_questions="y" * 201)
    )
    assert "example_questions" in response.context["adminform"].form.errors
    assert not Agent.objects.unscoped().filter(name="Buyer").exists()


@pytest.fixture
def signed_in(client, member):
    assert client.login(username=member.username, password=PASSWORD)
    return client


def test_the_chat_home_offers_each_agents_example_questions(signed_in, org):
    agent = AgentFactory(organization=org, name="Buyer", example_questions=QUESTIONS)
    AgentFactory(organization=org, name="Quiet")

    body = signed_in.get(f"/o/{org.slug}/chat/").content.decode()

    for question in QUESTIONS:
        assert f'data-question="{question}"' in body
    assert f'data-agent-id="{agent.pk}"' in body
    assert body.count('class="example-question"') == len(QUESTIONS)


def test_an_empty_new_chat_offers_the_agents_example_questions_escaped(signed_in, org):
    agent = AgentFactory(organization=org, example_questions=['<b onmouseover="x">Bold</b>?'])

    body = signed_in.get(f"/o/{org.slug}/chat/new/?agent={agent.pk}").content.decode()

    assert "&lt;b onmouseover=&quot;x&quot;&gt;Bold&lt;/b&gt;?" in body
    assert "<b onmouseover" not in body


def test_the_demo_agent_ships_example_questions_that_read_write_and_plan():
    from django.core.management import call_command

    call_command("seed_demo", password="demo-pass-123")
    agent = Agent.objects.unscoped().get(organization__slug="demo")

    # The fourth and fifth go through the demo MCP server (tests/connectors/demo/mcp/test_demo_mcp_questions.py),
    # the sixth searches the demo knowledge base (tests/agents/knowledge/test_demo_knowledge.py), the last
    # reads the demo skill (tests/agents/skills/test_demo_skill.py).
    assert len(agent.example_questions) == 7
    assert "policy" in agent.example_questions[5]
    assert "procedure" in agent.example_questions[6]
    read, write, plan = agent.example_questions[:3]
    assert "draft" in read.lower()
    assert "PO-0001" in write and "18,600" in write
    assert " and " in plan
    assert agent.execution_mode == "auto"  # the plan question is routed to plan mode
    # The demo model's tests prove what it does with them.
    phrasings = {question: tool for question, tool, _ in PHRASINGS}
    assert phrasings[read] == "list_purchase_orders" and phrasings[write] == "create_payment"
    assert plan == PLAN_QUESTION


def test_the_demo_holds_the_example_payment_for_approval_by_its_large_payments_policy():
    from django.core.management import call_command

    from hooks.models import ApprovalPolicy

    call_command("seed_demo", password="demo-pass-123")
    call_command("seed_demo")
    policy = ApprovalPolicy.objects.unscoped().get(organization__slug="demo", name="Large payments")
    assert policy.condition == "amount > 10000"
    assert [a.name for a in policy.actions.all()] == ["create_payment"]
    write = Agent.objects.unscoped().get(organization__slug="demo").example_questions[1]
    assert "18,600" in write  # above the policy's limit
