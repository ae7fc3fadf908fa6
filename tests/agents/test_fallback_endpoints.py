"""Fallback endpoints: the field (same organisation, no cycle; admin and API choices of the organisation
only) and a run whose endpoint is unavailable, answered by its fallback through the real openai SDK."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from django.core.exceptions import ValidationError

from agents import runtime
from agents.models import RunEvent, UsageRecord
from agents.runs.manager import run_manager
from tests.agents.factories import ModelConfigFactory
from tests.agents.usage.helpers import ReActModel, ask, build_org, conversation_for, done_of, order_tools
from tests.fakes.openai_server import ScriptedOpenAIServer


def base(org):
    return f"/api/v1/orgs/{org.slug}"


@pytest.mark.django_db
def test_a_fallback_of_another_organisation_is_refused(org, other_org):
    foreign = ModelConfigFactory(organization=other_org)
    config = ModelConfigFactory(organization=org, base_url="https://llm.example.com/v1", fallback=foreign)

    with pytest.raises(ValidationError) as caught:
        config.full_clean()

    assert "fallback" in caught.value.message_dict


@pytest.mark.django_db
def test_a_fallback_chain_that_comes_back_to_the_endpoint_is_refused(org):
    first = ModelConfigFactory(organization=org, base_url="https://a.example.com/v1")
    second = ModelConfigFactory(organization=org, base_url="https://b.example.com/v1", fallback=first)
    first.fallback = second

    with pytest.raises(ValidationError) as caught:
        first.full_clean()

    assert "cycle" in str(caught.value.message_dict["fallback"])


@pytest.mark.django_db
def test_the_api_sets_a_fallback_of_the_organisation_only(client_for, org_admin, org, other_org):
    client = client_for(org_admin)
    primary = ModelConfigFactory(organization=org, base_url="https://a.example.com/v1")
    backup = ModelConfigFactory(organization=org, base_url="https://b.example.com/v1")
    foreign = ModelConfigFactory(organization=other_org)
    url = f"{base(org)}/model-configs/{primary.pk}/"

    refused = client.patch(url, {"fallback": str(foreign.pk)}, format="json")
    accepted = client.patch(url, {"fallback": str(backup.pk)}, format="json")
    cycle = client.patch(
        f"{base(org)}/model-configs/{backup.pk}/", {"fallback": str(primary.pk)}, format="json"
    )

    assert refused.status_code == 400 and "fallback" in refused.json()
    assert accepted.status_code == 200 and accepted.json()["fallback"] == str(backup.pk)
    assert cycle.status_code == 400 and "fallback" in cycle.json()
    primary.refresh_from_db()
    backup.refresh_from_db()
    assert (primary.fallback_id, backup.fallback_id) == (backup.pk, None)


@pytest.mark.django_db
def test_the_admin_offers_the_organisations_endpoints_only(client, org_admin, org, other_org):
    own = ModelConfigFactory(organization=org, name="Own backup")
    ModelConfigFactory(organization=other_org, name="Foreign backup")
    client.force_login(org_admin)

    page = client.get(f"/admin/agents/modelconfig/{own.pk}/change/").content.decode()

    assert 'name="fallback"' in page
    assert "Own backup" in page and "Foreign backup" not in page


# -- a run ------------------------------------------------------------------------------------


@pytest.fixture
def down_server() -> Iterator[ScriptedOpenAIServer]:
    """An endpoint with nothing scripted: it answers every request HTTP 500 (not retryable)."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.mark.django_db(transaction=True)
async def test_a_run_goes_on_when_its_endpoint_fails_and_records_the_fallback_that_answered(
    scripted_llm, down_server, monkeypatch
):
    # given an agent on an endpoint that answers 500, whose fallback is the scripted model
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=1).install(scripted_llm)

    def given():
        org, user, agent, backup = build_org(scripted_llm.base_url)
        backup.name = "Backup model"
        backup.is_default = False
        backup.save()
        primary = ModelConfigFactory(
            organization=org, name="Primary model", base_url=down_server.base_url, fallback=backup
        )
        agent.model_config = primary
        agent.save()
        return user, conversation_for(org, user, agent), backup

    user, conversation, backup = await database_sync_to_async(given)()

    # when the user asks
    frames = await ask(user, conversation, "Where is order 7?")
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)

    # then the fallback answered, the chat was told once, and the usage rows name the fallback
    done = done_of(frames)
    assert done["answer"] == "Order 7 has shipped." and done["stop_reason"] != "llm_error"
    fallbacks = [f["data"] for f in frames if f["event"] == "step" and f["data"].get("type") == "fallback"]
    assert fallbacks == [
        {"type": "fallback", "endpoint": "Backup model", "failed": ["Primary model"], "reason": "HTTP 500"}
    ]
    assert down_server.requests  # the primary was asked first

    def stored():
        run_id = frames[0]["run_id"]
        events = list(RunEvent.objects.filter(run_id=run_id, event="step").values_list("data", flat=True))
        configs = set(
            UsageRecord.objects.unscoped().filter(run_id=run_id).values_list("model_config_id", flat=True)
        )
        return events, configs

    events, configs = await database_sync_to_async(stored)()
    assert any(e.get("type") == "fallback" for e in events)
    assert configs == {backup.pk}
