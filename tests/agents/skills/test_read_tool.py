"""A run of an agent allowed skills lists them in its system prompt and reads one on demand with
``skills__read_skill``, a connector's tool behind the same guard rails as every other: the scripted model
sees the list and the tool, calls it, and receives the skill's body; the call log records the skill and
the version read, never its text; read-only mode lets it through. A skill of another organisation, not
allowed to the agent, or switched off is neither listed nor read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.skills import DESCRIPTION_CHARS, MAX_LISTED_SKILLS
from agents.engine.tool_context import ToolCallContext
from agents.skills.services import skill_update
from connectors.models import CallStatus, Connector, ConnectorCallLog, ConnectorKind
from platform_core.models import Role
from platform_core.services import organization_set_read_only
from tests.agents.blueprint_runs import blueprint_of, react_over
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.agents.skills.world import APPROVAL_BODY, APPROVAL_DESCRIPTION, skill_of
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

TOOL = "skills__read_skill"
QUESTION = "Who must approve a payment of 18,600 CNY?"


def agent_of(org, llm_base_url: str = "http://127.0.0.1:9/v1"):
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    return AgentFactory(organization=org, name="Purchasing assistant", instructions="Help the buyers.")


def run_of(org, agent, user=None) -> runtime.RunBlueprint:
    """A run of ``agent`` by ``user`` (a member) asking :data:`QUESTION`, built as the run manager does."""
    return blueprint_of(org, agent, user or member_of(org, Role.MEMBER), QUESTION)


async def run_react(blueprint: runtime.RunBlueprint, make_llm) -> Any:
    _agent, result = await react_over(blueprint, make_llm())
    return result


def read(blueprint: runtime.RunBlueprint, **arguments: str) -> Any:
    tool = runtime.tools_for(blueprint).get(TOOL)
    assert tool is not None
    return async_to_sync(tool.execute)(ToolCallContext(TOOL, "c1", blueprint.context), **arguments)


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def _logs(org) -> list[ConnectorCallLog]:
    return list(
        ConnectorCallLog.objects.for_org(org)
        .filter(tool_name=TOOL)
        .select_related("connector")
        .order_by("created_at", "id")
    )


@pytest.mark.django_db(transaction=True)
async def test_the_model_sees_the_skills_calls_the_tool_and_reads_the_body(scripted_llm, make_llm):
    def world():
        org = OrganizationFactory()
        agent = agent_of(org, scripted_llm.base_url)
        skill_of(org, agents=[agent], files={"templates/request.md": "Amount:\nSupplier:\n"})
        return org, run_of(org, agent)

    org, blueprint = await database_sync_to_async(world)()
    scripted_llm.script(
        tool_calls(call(TOOL, {"name": "purchase-approval"})),
        text("An approver must approve it before payment."),
    )

    result = await run_react(blueprint, make_llm)

    assert result.answer == "An approver must approve it before payment."
    first, second = scripted_llm.requests[0], scripted_llm.requests[1]
    system = first["messages"][0]["content"]
    assert system.startswith("Help the buyers.\n\n## Skills\n")
    assert f"- purchase-approval: {APPROVAL_DESCRIPTION}" in system
    assert f"`{TOOL}`" in system and APPROVAL_BODY not in system
    assert TOOL in tool_names(first)
    received = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert received.startswith('Skill "purchase-approval" (version 1):\n\n# Purchase approval')
    assert "above it an approver must approve before payment" in received
    assert received.endswith("Files of this skill (read one with `file`): templates/request.md")

    (log,) = await database_sync_to_async(_logs)(org)
    assert log.status == CallStatus.OK and not log.is_write
    assert log.connector.kind == ConnectorKind.SKILLS
    assert log.arguments == {"name": "purchase-approval"}
    assert log.retrieved == [{"skill": "purchase-approval", "version": 1, "file": ""}]
    assert "approver" not in json.dumps(log.retrieved)


@pytest.mark.django_db
def test_a_file_of_the_skill_is_read_by_its_path(org, org_admin):
    agent = agent_of(org)
    skill_of(org, agents=[agent], files={"templates/request.md": "Amount:\nSupplier:\n"})
    blueprint = run_of(org, agent)

    found = read(blueprint, name="purchase-approval", file="templates/request.md")
    missing = read(blueprint, name="purchase-approval", file="nothing.md")

    assert found.content == (
        'File "templates/request.md" of the skill "purchase-approval" (version 1):\n\nAmount:\nSupplier:\n'
    )
    assert found.call.retrieved == (
        {"skill": "purchase-approval", "version": 1, "file": "templates/request.md"},
    )
    assert missing.is_error and "Its files: templates/request.md" in missing.content


@pytest.mark.django_db
def test_an_edited_skill_is_read_at_its_new_version(org, org_admin):
    agent = agent_of(org)
    skill = skill_of(org, agents=[agent])
    blueprint = run_of(org, agent)
    assert read(blueprint, name="purchase-approval").call.retrieved[0]["version"] == 1

    skill_update(skill=skill, actor=org_admin, body="# Purchase approval\n\nEvery purchase waits for Ada.\n")
    again = read(run_of(org, agent), name="purchase-approval")

    assert again.call.retrieved == ({"skill": "purchase-approval", "version": 2, "file": ""},)
    assert "Every purchase waits for Ada." in again.content


@pytest.mark.django_db
def test_a_skill_of_another_organisation_or_not_allowed_is_neither_listed_nor_read(org, other_org):
    agent = agent_of(org)
    skill_of(org, agents=[agent])
    skill_of(org, "supplier-onboarding", description="How a new supplier is checked.")  # not allowed
    other_agent = AgentFactory(organization=other_org)
    skill_of(other_org, "payment-secrets", description="Globex only.", agents=[other_agent])
    blueprint = run_of(org, agent)

    system = blueprint.system_prompt
    assert "purchase-approval" in system
    assert "supplier-onboarding" not in system and "payment-secrets" not in system
    for name in ("supplier-onboarding", "payment-secrets"):
        refused = read(blueprint, name=name)
        assert refused.is_error and refused.content.startswith(f'Error: No such skill: "{name}".')
        assert "supplier" not in refused.content.split("read:")[-1]
        assert "payment" not in refused.content.split("read:")[-1]
    assert read(blueprint, name="purchase-approval").call.retrieved[0]["skill"] == "purchase-approval"


@pytest.mark.django_db
def test_an_agent_without_skills_gets_no_tool_and_no_list(org):
    agent = agent_of(org)
    skill_of(org)  # the organisation has one, not allowed to this agent

    blueprint = run_of(org, agent)

    assert blueprint.skills is None and blueprint.system_prompt == "Help the buyers."
    assert TOOL not in runtime.tools_for(blueprint).names()


@pytest.mark.django_db
def test_a_skill_switched_off_mid_run_is_no_longer_read(org, org_admin):
    agent = agent_of(org)
    skill = skill_of(org, agents=[agent])
    blueprint = run_of(org, agent)

    skill_update(skill=skill, actor=org_admin, is_active=False)

    assert read(blueprint, name="purchase-approval").is_error
    assert run_of(org, agent).skills is None


@pytest.mark.django_db
def test_the_skill_library_switched_off_lists_and_reads_nothing(org):
    agent = agent_of(org)
    skill_of(org, agents=[agent])
    Connector.objects.for_org(org).filter(kind=ConnectorKind.SKILLS).update(is_active=False)

    blueprint = run_of(org, agent)

    assert blueprint.skills is None and "## Skills" not in blueprint.system_prompt
    assert TOOL not in runtime.tools_for(blueprint).names()


@pytest.mark.django_db(transaction=True)
async def test_read_only_mode_lets_a_skill_be_read(scripted_llm, make_llm):
    def world():
        org = OrganizationFactory()
        agent = agent_of(org, scripted_llm.base_url)
        skill_of(org, agents=[agent])
        organization_set_read_only(organization=org, actor=None, enabled=True, reason="audit")
        return org, run_of(org, agent)

    org, blueprint = await database_sync_to_async(world)()
    scripted_llm.script(tool_calls(call(TOOL, {"name": "purchase-approval"})), text("done"))

    await run_react(blueprint, make_llm)

    (log,) = await database_sync_to_async(_logs)(org)
    assert log.status == CallStatus.OK


@pytest.mark.django_db
def test_the_list_is_bounded_and_descriptions_are_cut(org):
    agent = agent_of(org)
    for number in range(MAX_LISTED_SKILLS + 5):
        skill_of(org, f"skill-{number:03d}", description="Step " * 200, agents=[agent])

    blueprint = run_of(org, agent)

    listed = [line for line in blueprint.system_prompt.splitlines() if line.startswith("- skill-")]
    assert len(listed) == MAX_LISTED_SKILLS
    assert all(len(line.split(": ", 1)[1]) <= DESCRIPTION_CHARS for line in listed)
    assert listed[0].endswith("…")


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_config_cache")
def test_the_next_run_sees_a_skill_allowed_renamed_or_taken_away(org, org_admin):
    agent = agent_of(org)
    skill = skill_of(org)
    assert run_of(org, agent).skills is None

    agent.skills.add(skill)
    assert [s.name for s in run_of(org, agent).skills.listings] == ["purchase-approval"]

    skill_update(skill=skill, actor=org_admin, name="approval")
    assert [s.name for s in run_of(org, agent).skills.listings] == ["approval"]

    agent.skills.remove(skill)
    assert run_of(org, agent).skills is None
