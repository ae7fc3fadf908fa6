"""A model endpoint's admin page in Debian's chromium under the strict policy: choosing a provider and a model
family fills the form from the presets, and "Check endpoint" probes the scripted server and shows its report.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer
from tests.fakes.openai_replies import call, error, text, tool_calls

pytestmark = pytest.mark.e2e

ORG = "presets-org"
OWNER = "presets-olga"


def build_endpoint_world(base_url: str) -> dict[str, str]:
    """An organisation, its owner and an endpoint on ``base_url`` (run against the e2e server's database)."""
    from platform_core.models import Role
    from tests.factories import OrganizationFactory, member_of

    org = OrganizationFactory(slug=ORG, name="Presets")
    member_of(org, Role.OWNER, username=OWNER)
    # Only once tests.factories is loaded: it imports the agents' factories itself.
    from tests.agents.factories import ModelConfigFactory

    config = ModelConfigFactory(organization=org, name="scripted", base_url=base_url, api_key="sk-e2e")
    return {"endpoint": str(config.pk)}


@pytest.fixture(scope="module")
def endpoint_world(e2e_server: E2EServer, scripted_llm_server) -> dict[str, str]:
    return e2e_server.build(
        "tests.e2e.test_model_presets_page:build_endpoint_world", scripted_llm_server.base_url
    )


@pytest.fixture
def admin_page(signed_in_page, endpoint_world):
    return signed_in_page(OWNER)


def test_choosing_a_provider_and_a_family_fills_the_form(admin_page, e2e_server):
    page, errors = admin_page
    page.goto(f"{e2e_server.url}/admin/agents/modelconfig/add/")

    page.select_option("#id_provider", "azure-openai")

    expect(page.locator("#id_base_url")).to_have_value(
        "https://{resource}.openai.azure.com/openai/deployments/{deployment}"
    )
    expect(page.locator("#id_api_version")).to_have_value("2024-10-21")
    expect(page.locator("#model-preset-help")).to_contain_text("{resource}")
    expect(page.locator("#id_model")).to_have_value("gpt-4.1")
    expect(page.locator("#id_context_window")).to_have_value("1047576")
    expect(page.locator("#id_vision")).to_be_checked()

    page.select_option("#id_model_family", "azure-openai:o-series")

    expect(page.locator("#id_model")).to_have_value("o4-mini")
    expect(page.locator("#id_max_output_tokens")).to_have_value("")
    expect(page.locator("#id_reasoning_replay")).to_have_value("false")

    page.select_option("#id_provider", "qwen-dashscope")
    page.select_option("#id_model_family", "qwen-dashscope:qwen3-thinking")

    expect(page.locator("#id_stream_only")).to_be_checked()
    expect(page.locator("#id_json_mode")).not_to_be_checked()
    expect(page.locator("#id_api_version")).to_have_value("")
    # Everything stays editable.
    page.fill("#id_base_url", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1")
    expect(page.locator("#id_base_url")).to_have_value(
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    )
    assert errors == []


def test_an_embedding_or_rerank_family_sets_the_model_and_the_role(admin_page, e2e_server):
    page, errors = admin_page
    page.goto(f"{e2e_server.url}/admin/agents/modelconfig/add/")

    page.select_option("#id_provider", "qwen-dashscope")
    page.select_option("#id_model_family", "qwen-dashscope:embedding/text-embedding-v4")

    expect(page.locator("#id_model")).to_have_value("text-embedding-v4")
    expect(page.locator("#id_role")).to_have_value("embedding")

    page.select_option("#id_provider", "jina")
    page.select_option("#id_model_family", "jina:rerank/jina-reranker-v2-base-multilingual")

    expect(page.locator("#id_role")).to_have_value("rerank")
    expect(page.locator("#id_model")).to_have_value("jina-reranker-v2-base-multilingual")
    expect(page.locator("#id_base_url")).to_have_value("https://api.jina.ai/v1")

    page.select_option("#id_provider", "deepseek")
    page.select_option("#id_model_family", "deepseek:deepseek-chat")

    expect(page.locator("#id_role")).to_have_value("general")  # a chat family leaves a non-chat role
    assert errors == []


def test_check_endpoint_shows_the_report_and_applies_the_abilities_found(
    admin_page, e2e_server, endpoint_world, scripted_llm
):
    def no_forced_choice(body):
        asked = json.dumps(body.get("messages") or [])
        if body.get("tools") and body.get("tool_choice") is not None:
            return error(400, message="tool_choice only supports auto")
        if body.get("tools") and "twice" in asked:
            return tool_calls(call("echo_word", {"word": "ping"}), call("echo_word", {"word": "pong"}))
        if body.get("tools"):
            return tool_calls(call("echo_word", {"word": "ping"}))
        if body.get("response_format"):
            return text('{"ok": true}')
        return text("OK")

    scripted_llm.script(*[no_forced_choice] * 20)
    page, errors = admin_page
    page.goto(f"{e2e_server.url}/admin/agents/modelconfig/{endpoint_world['endpoint']}/change/")

    page.click("#check-endpoint")

    report = page.locator("#endpoint-check")
    expect(report.locator(".endpoint-check-probes")).to_contain_text("tool_choice only supports auto")
    expect(report.locator(".probe-works").first).to_be_visible()
    expect(report).to_contain_text("Checked at")

    page.click("#apply-check")

    expect(page.locator("#id_forced_tool_choice")).not_to_be_checked()
    expect(page.locator("#endpoint-check")).to_contain_text("The stored abilities match")
    assert errors == []
