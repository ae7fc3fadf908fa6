"""Endpoint presets, the endpoint fields they fill, and "Check endpoint" in the admin and the API.

The endpoints checked here are the scripted OpenAI-compatible server (through the real SDK); the admin is
driven with Django's test client, the API with Bearer tokens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from agents import runtime
from agents.endpoint_headers import headers_parse
from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from agents.model_presets import (
    ABILITY_KEYS,
    PRESETS,
    embedding_batch_size,
    preset_for,
    presets_as_data,
    rerank_path_for,
)
from agents.models import ModelConfig, ModelProvider
from platform_core.models import AuditLog, Role
from tests.agents.factories import ModelConfigFactory
from tests.factories import PASSWORD, member_of
from tests.fakes.openai_replies import call, error, text, tool_calls

pytestmark = pytest.mark.django_db

API_KEY = "sk-org-secret-key-000"
GATEWAY_SECRET = "gw-secret-value-123"


@pytest.fixture(autouse=True)
async def _close_llm_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


@pytest.fixture
def admin_client(client, org):
    user = member_of(org, Role.ADMIN, username="ada")
    assert client.login(username=user.username, password=PASSWORD)
    return client


def capable_model(body: dict[str, Any]) -> Any:
    """Calls the function when asked or forced, answers JSON when asked for it, else OK."""
    asked = json.dumps(body.get("messages") or [])
    if body.get("tools") and "twice" in asked:
        return tool_calls(call("echo_word", {"word": "ping"}), call("echo_word", {"word": "pong"}))
    if body.get("tools") and ("Call the function" in asked or body.get("tool_choice") not in (None, "auto")):
        return tool_calls(call("echo_word", {"word": "ping"}))
    if body.get("response_format"):
        return text('{"ok": true}')
    return text("OK")


def no_forced_choice(body: dict[str, Any]) -> Any:
    if body.get("tools") and body.get("tool_choice") is not None:
        return error(400, message="tool_choice only supports auto")
    return capable_model(body)


def scripted_endpoint(org, server, **fields: Any) -> ModelConfig:
    return ModelConfigFactory(organization=org, base_url=server.base_url, api_key=API_KEY, **fields)


# --- presets ----------------------------------------------------------------------------------------


def test_every_provider_but_custom_has_a_preset_with_sources():
    providers = {p.provider for p in PRESETS}
    assert providers == set(ModelProvider.values) - {ModelProvider.CUSTOM}
    assert preset_for(ModelProvider.CUSTOM) is None
    for preset in PRESETS:
        assert preset.source.startswith("https://")
        assert preset.families or preset.rerank_families, preset.provider
        for family in preset.families:
            assert family.source.startswith("https://"), family.key
            assert family.context_window >= 8192  # the form's minimum
            assert set(preset.abilities_for(family.key)) == set(ABILITY_KEYS)


def test_presets_set_what_each_provider_documents():
    assert preset_for("azure-openai").api_key_header == "api-key"
    assert preset_for("azure-openai").api_version
    assert "{resource}" in preset_for("azure-openai").base_url
    assert preset_for("qwen-dashscope").abilities_for("qwen3-thinking")["stream_only"] is True
    assert preset_for("qwen-dashscope").abilities_for("qwen-plus")["stream_only"] is False
    assert preset_for("deepseek").abilities_for("deepseek-reasoner")["reasoning_replay"] is True
    assert preset_for("glm-zhipu").abilities_for()["forced_tool_choice"] is False
    # OpenAI's reasoning models refuse max_tokens: no output limit is filled in for them.
    assert preset_for("openai").family("o-series").max_output_tokens is None


def test_embedding_models_are_apart_from_chat_models_with_their_dimensions_and_sources():
    for preset in PRESETS:
        chat_models = {f.model for f in preset.families if f.model}
        for family in preset.embedding_families:
            assert family.source.startswith("https://"), family.key
            assert family.model not in chat_models, family.key
            assert family.dimension is None or family.dimension > 0
            assert family.dimension not in family.dimensions
    embedding = {p.provider for p in PRESETS if p.embedding_families}
    assert embedding == {
        "openai",
        "azure-openai",
        "qwen-dashscope",
        "glm-zhipu",
        "doubao-ark",
        "vllm",
        "ollama",
    }
    assert preset_for("openai").embedding_family("text-embedding-3-small").dimension == 1536
    assert preset_for("glm-zhipu").embedding_family("embedding-3").dimension == 2048
    assert preset_for("ollama").embedding_family("nomic-embed-text").dimension == 768


def test_rerank_models_are_apart_from_chat_models_with_where_their_api_lives_and_sources():
    for preset in PRESETS:
        chat_models = {f.model for f in preset.families if f.model}
        for family in preset.rerank_families:
            assert family.source.startswith("https://"), family.key
            assert family.model not in chat_models, family.key
    assert {p.provider for p in PRESETS if p.rerank_families} == {"qwen-dashscope", "vllm", "jina", "cohere"}
    # Jina AI and Cohere are here for reranking only.
    assert {p.provider for p in PRESETS if not p.families} == {"jina", "cohere"}
    dashscope = preset_for("qwen-dashscope")
    assert dashscope.rerank_base_url.endswith("/compatible-api/v1") and dashscope.rerank_path == "/reranks"
    assert rerank_path_for("qwen-dashscope") == "/reranks"
    assert rerank_path_for("vllm") == rerank_path_for("custom") == rerank_path_for("cohere") == "/rerank"
    assert preset_for("cohere").base_url == "https://api.cohere.ai/v2"
    assert preset_for("jina").rerank_family("jina-reranker-v2-base-multilingual") is not None


def test_a_provider_that_only_reranks_cannot_chat_and_a_rerank_endpoint_is_not_at_the_chat_address(org):
    jina_chat = ModelConfigFactory.build(
        organization=org, provider="jina", role="general", base_url="https://api.jina.ai/v1"
    )
    with pytest.raises(ValidationError) as refused:
        jina_chat.full_clean()
    assert "provider" in refused.value.message_dict
    jina_chat.role = "rerank"
    jina_chat.full_clean()

    dashscope = ModelConfigFactory.build(
        organization=org,
        provider="qwen-dashscope",
        role="rerank",
        model="qwen3-rerank",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
    )
    with pytest.raises(ValidationError) as refused:
        dashscope.full_clean()
    assert "compatible-api" in " ".join(refused.value.message_dict["base_url"])
    dashscope.base_url = preset_for("qwen-dashscope").rerank_base_url
    dashscope.full_clean()


def test_an_embedding_request_carries_as_many_texts_as_the_provider_takes():
    assert embedding_batch_size("qwen-dashscope", "text-embedding-v4") == 10
    assert embedding_batch_size("glm-zhipu", "embedding-3") == 64
    assert embedding_batch_size("openai", "text-embedding-3-large") == 64  # 2,048 allowed; 64 is enough
    assert embedding_batch_size("doubao-ark", "ep-20250101-abcde") == 64  # an endpoint id: not known
    assert embedding_batch_size("custom", "anything") == 64


def test_presets_as_data_is_json_in_the_active_language(settings):
    from django.utils import translation

    with translation.override("zh-hans"):
        data = presets_as_data()
    assert json.loads(json.dumps(data)) == data
    assert {p["provider"] for p in data} == {p.provider for p in PRESETS}
    vllm = next(p for p in data if p["provider"] == "vllm")
    assert {f["role"] for f in vllm["embedding_families"]} == {"embedding"}
    assert "嵌入" in vllm["embedding_families"][-1]["label"]
    assert {f["role"] for f in vllm["rerank_families"]} == {"rerank"}
    assert vllm["rerank_families"][0]["base_url"] == "http://{host}:8000/v1"
    assert vllm["rerank_families"][0]["path"] == "/rerank"


# --- the endpoint's fields reach the LLM ---------------------------------------------------------


def test_an_endpoints_abilities_headers_and_azure_settings_reach_the_llm(org):
    config = ModelConfigFactory(
        organization=org,
        provider=ModelProvider.AZURE_OPENAI,
        base_url="https://res.openai.azure.com/openai/deployments/gpt-4o",
        api_key=API_KEY,
        api_version="2024-10-21",
        extra_headers=json.dumps({"X-Gateway-Key": GATEWAY_SECRET}),
        parallel_tool_calls=False,
        forced_tool_choice=False,
        stream_only=True,
        reasoning_replay=False,
        max_output_tokens=4096,
    )
    endpoint = runtime.endpoint_of(ModelConfig.objects.unscoped().get(pk=config.pk))
    llm = runtime.llm_for(endpoint)

    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.api_key_header == "api-key"
    assert dict(llm.default_query) == {"api-version": "2024-10-21"}
    assert dict(llm.default_headers) == {"X-Gateway-Key": GATEWAY_SECRET}
    assert llm.max_output_tokens == 4096
    assert llm.abilities["parallel_tool_calls"] is False
    assert llm.abilities["forced_tool_choice"] is False
    assert llm.abilities["stream_only"] is True
    assert llm.reasoning_replay is False
    assert GATEWAY_SECRET not in repr(endpoint) and API_KEY not in repr(endpoint)


def test_an_existing_endpoint_keeps_todays_behaviour(org):
    config = ModelConfigFactory(organization=org)
    assert config.provider == ModelProvider.CUSTOM
    llm = runtime.llm_for(runtime.endpoint_of(config))
    assert llm.api_key_header is None and not llm.default_headers and not llm.default_query
    assert llm.max_output_tokens is None
    assert llm.abilities["parallel_tool_calls"] and llm.abilities["forced_tool_choice"]
    assert not llm.abilities["stream_only"]


def test_extra_headers_are_encrypted_at_rest(org):
    config = ModelConfigFactory(organization=org, extra_headers=json.dumps({"X-Gateway-Key": GATEWAY_SECRET}))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extra_headers FROM agents_modelconfig WHERE id = %s",
            [config.pk.hex if connection.vendor == "sqlite" else config.pk],
        )
        rows = cursor.fetchall()
    assert rows and GATEWAY_SECRET not in rows[0][0]
    assert ModelConfig.objects.unscoped().get(pk=config.pk).headers == {"X-Gateway-Key": GATEWAY_SECRET}


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer x"},
        {"host": "evil.example"},
        {"Transfer-Encoding": "chunked"},
        {"Connection": "close"},
        {"api-key": "k"},
        {"X-Ok": "line\r\nInjected: yes"},
        {"Bad Name": "v"},
        {"X-Num": 5},
    ],
)
def test_extra_headers_that_would_override_the_client_or_break_http_are_refused(headers):
    with pytest.raises(ValidationError):
        headers_parse(json.dumps(headers))


# --- admin ----------------------------------------------------------------------------------------


def _form(org, **overrides: Any) -> dict[str, Any]:
    data = {
        "organization": org.pk,
        "name": "main",
        "role": "general",
        "provider": "deepseek",
        "model_family": "deepseek:deepseek-chat",
        "base_url": "https://api.deepseek.com",
        "model": "deepseek-chat",
        "api_key_input": API_KEY,
        "extra_headers_input": json.dumps({"X-Gateway-Key": GATEWAY_SECRET}),
        "tool_call": "on",
        "json_mode": "on",
        "reasoning_replay": "true",
        "context_window": 128000,
        "max_output_tokens": 8192,
        "timeout": 60,
        "active": "on",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_the_admin_form_carries_the_presets_and_their_script(admin_client, org):
    page = admin_client.get(reverse("admin:agents_modelconfig_add"))
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="model-presets-data"' in body
    assert "agents/model-presets.js" in body
    assert "<script>" not in body.split('id="model-presets-data"')[0].rsplit("</head>", 1)[-1]


def test_the_admin_saves_provider_abilities_and_headers_and_never_shows_the_header_values(admin_client, org):
    response = admin_client.post(reverse("admin:agents_modelconfig_add"), _form(org))
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    config = ModelConfig.objects.unscoped().get(organization=org, name="main")
    assert config.provider == "deepseek"
    assert config.parallel_tool_calls is False and config.forced_tool_choice is False  # unticked boxes
    assert config.reasoning_replay is True and config.max_output_tokens == 8192
    assert config.headers == {"X-Gateway-Key": GATEWAY_SECRET}

    page = admin_client.get(reverse("admin:agents_modelconfig_change", args=[config.pk])).content.decode()
    assert "X-Gateway-Key" in page
    assert GATEWAY_SECRET not in page and API_KEY not in page


def test_the_admin_saves_a_rerank_endpoint_of_a_provider_that_only_reranks(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_modelconfig_add"),
        _form(
            org,
            name="reranker",
            role="rerank",
            provider="cohere",
            model_family=None,
            base_url="https://api.cohere.ai/v2",
            model="rerank-v3.5",
            extra_headers_input=None,
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    config = ModelConfig.objects.unscoped().get(organization=org, name="reranker")
    assert (config.role, config.provider, config.model) == ("rerank", "cohere", "rerank-v3.5")

    refused = admin_client.post(
        reverse("admin:agents_modelconfig_add"),
        _form(
            org, name="cohere-chat", provider="cohere", model_family=None, base_url="https://api.cohere.ai/v2"
        ),
    )
    assert refused.status_code == 200
    assert "provider" in refused.context["adminform"].form.errors


def test_the_admin_refuses_headers_that_override_the_key(admin_client, org):
    response = admin_client.post(
        reverse("admin:agents_modelconfig_add"),
        _form(org, extra_headers_input='{"Authorization": "Bearer x"}'),
    )
    assert response.status_code == 200
    assert "extra_headers_input" in response.context["adminform"].form.errors
    assert not ModelConfig.objects.unscoped().filter(organization=org).exists()


def test_check_endpoint_in_the_admin_stores_the_report_and_applies_the_abilities_found(
    admin_client, org, scripted_llm
):
    config = scripted_endpoint(org, scripted_llm)
    scripted_llm.script(*[no_forced_choice] * 20)

    response = admin_client.post(reverse("admin:agents_modelconfig_check", args=[config.pk]))

    assert response.status_code == 302
    config.refresh_from_db()
    assert config.last_checked_at is not None
    assert config.last_check["abilities"]["forced_tool_choice"] is False
    page = admin_client.get(reverse("admin:agents_modelconfig_change", args=[config.pk])).content.decode()
    assert "tool_choice only supports auto" in page
    assert 'id="apply-check"' in page

    admin_client.post(reverse("admin:agents_modelconfig_apply_check", args=[config.pk]))

    config.refresh_from_db()
    assert config.forced_tool_choice is False
    assert config.tool_call is True
    assert AuditLog.objects.filter(organization=org, action="model_config.updated").count() == 2


def test_check_endpoint_in_the_admin_answers_post_only_and_hides_other_orgs(admin_client, org, other_org):
    mine = ModelConfigFactory(organization=org)
    foreign = ModelConfigFactory(organization=other_org)
    assert admin_client.get(reverse("admin:agents_modelconfig_check", args=[mine.pk])).status_code == 403
    for name in ("admin:agents_modelconfig_check", "admin:agents_modelconfig_apply_check"):
        assert admin_client.post(reverse(name, args=[foreign.pk])).status_code == 404
    foreign.refresh_from_db()
    assert foreign.last_check is None


def test_the_admin_pages_speak_chinese(admin_client, org, scripted_llm):
    from django.utils import translation

    with translation.override("zh-hans"):
        if translation.gettext("Check endpoint") == "Check endpoint":
            pytest.skip("the zh-hans catalogue does not hold this round's strings yet (merged by the lead)")
    config = scripted_endpoint(org, scripted_llm)
    scripted_llm.script(*[capable_model] * 20)
    admin_client.post(
        reverse("admin:agents_modelconfig_check", args=[config.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    page = admin_client.get(
        reverse("admin:agents_modelconfig_change", args=[config.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert "检查端点" in page
    assert "没有模型列表" in page  # the probes' messages, written in the language of who ran the check


# --- API -----------------------------------------------------------------------------------------


def base(org) -> str:
    return f"/api/v1/orgs/{org.slug}"


def test_the_presets_endpoint_lists_every_provider(client_for, member):
    response = client_for(member).get("/api/v1/model-presets/")
    assert response.status_code == 200
    assert {p["provider"] for p in response.json()} == {p.provider for p in PRESETS}
    qwen = next(p for p in response.json() if p["provider"] == "qwen-dashscope")
    assert qwen["embedding_families"][0]["model"] == "text-embedding-v4"
    assert qwen["embedding_families"][0]["max_batch"] == 10
    assert qwen["rerank_families"][0]["model"] == "qwen3-rerank"
    assert qwen["rerank_families"][0]["path"] == "/reranks"
    assert qwen["rerank_families"][0]["base_url"] == "https://dashscope-intl.aliyuncs.com/compatible-api/v1"


def test_the_presets_endpoint_needs_a_signed_in_user(api_client):
    assert api_client.get("/api/v1/model-presets/").status_code in (401, 403)


def test_the_api_writes_headers_write_only_and_exposes_the_new_fields(client_for, org_admin, org):
    client = client_for(org_admin)
    response = client.post(
        f"{base(org)}/model-configs/",
        {
            "name": "azure",
            "provider": "azure-openai",
            "base_url": "https://res.openai.azure.com/openai/deployments/gpt-4o",
            "model": "gpt-4o",
            "api_key": API_KEY,
            "api_version": "2024-10-21",
            "extra_headers": {"X-Gateway-Key": GATEWAY_SECRET},
            "parallel_tool_calls": False,
            "max_output_tokens": 4096,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["extra_header_names"] == ["X-Gateway-Key"] and "extra_headers" not in body
    assert body["provider"] == "azure-openai" and body["parallel_tool_calls"] is False
    assert body["last_check"] is None
    assert GATEWAY_SECRET not in response.content.decode()
    audit = AuditLog.objects.get(organization=org, action="model_config.created")
    assert GATEWAY_SECRET not in json.dumps(audit.after) and audit.after["extra_headers_set"] is True

    refused = client.patch(
        f"{base(org)}/model-configs/{body['id']}/", {"extra_headers": {"Host": "x"}}, format="json"
    )
    assert refused.status_code == 400


def test_the_api_checks_an_endpoint_and_applies_the_abilities_found(client_for, org_admin, org, scripted_llm):
    config = scripted_endpoint(org, scripted_llm)
    scripted_llm.script(*[no_forced_choice] * 20)
    client = client_for(org_admin)

    early = client.post(f"{base(org)}/model-configs/{config.pk}/apply-check/")
    assert early.status_code == 409

    checked = client.post(f"{base(org)}/model-configs/{config.pk}/check/")
    assert checked.status_code == 200, checked.content
    report = checked.json()
    assert report["key_verified"] is True
    assert {p["probe"]: p["status"] for p in report["probes"]}["forced_tool_choice"] == "refused"

    applied = client.post(f"{base(org)}/model-configs/{config.pk}/apply-check/")
    assert applied.status_code == 200
    assert applied.json()["changed"] == {"forced_tool_choice": False}
    assert applied.json()["model_config"]["forced_tool_choice"] is False
    assert applied.json()["model_config"]["last_check"]["abilities"]["forced_tool_choice"] is False


def test_members_cannot_check_endpoints(client_for, member, org):
    config = ModelConfigFactory(organization=org)
    assert client_for(member).post(f"{base(org)}/model-configs/{config.pk}/check/").status_code == 403


@pytest.mark.cross_org("model-config-check", "model-config-apply-check")
def test_checking_another_orgs_endpoint_is_404_and_changes_nothing(client_for, org_admin, org, other_org):
    foreign = ModelConfigFactory(organization=other_org, last_check={"abilities": {"tool_call": False}})
    client = client_for(org_admin)
    assert client.post(f"{base(org)}/model-configs/{foreign.pk}/check/").status_code == 404
    assert client.post(f"{base(org)}/model-configs/{foreign.pk}/apply-check/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.tool_call is True


def test_the_endpoint_form_labels_are_capitalised_and_a_saved_endpoint_shows_its_family(admin_client, org):
    """The form's own fields read like Django's ("Model family", not "model family:"), a saved endpoint
    opens with the family of its model chosen (it was reset to "---------"), and the token fields are the
    admin's wide number fields (a 1,000,000-token window did not fit)."""
    config = ModelConfigFactory(organization=org, provider="qwen-dashscope", model="qwen-plus")
    page = admin_client.get(reverse("admin:agents_modelconfig_change", args=[config.pk]))
    form = page.context["adminform"].form
    assert form.fields["model_family"].label == "Model family"
    assert form.fields["extra_headers_input"].label == "Extra headers"
    family = form["model_family"].value()
    assert family.startswith("qwen-dashscope:")
    assert preset_for("qwen-dashscope").family(family.split(":", 1)[1]).model == "qwen-plus"
    html = page.content.decode()
    assert f'<option value="{family}" selected>' in html
    for name in ("context_window", "max_output_tokens"):
        assert "vBigIntegerField" in str(form[name])
    custom = ModelConfigFactory(organization=org, model="my-own-model")
    assert admin_client.get(reverse("admin:agents_modelconfig_change", args=[custom.pk])).context[
        "adminform"
    ].form["model_family"].value() in ("", None)


def test_the_api_creates_a_rerank_endpoint_and_refuses_a_chat_role_for_a_provider_that_only_reranks(
    client_for, org_admin, org
):
    client = client_for(org_admin)
    endpoint = {
        "name": "jina",
        "provider": "jina",
        "base_url": "https://api.jina.ai/v1",
        "model": "jina-reranker-v2-base-multilingual",
        "api_key": API_KEY,
    }

    refused = client.post(f"{base(org)}/model-configs/", {**endpoint, "role": "general"}, format="json")
    assert refused.status_code == 400 and "provider" in refused.json()
    created = client.post(f"{base(org)}/model-configs/", {**endpoint, "role": "rerank"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["role"] == "rerank"
    default = client.patch(
        f"{base(org)}/model-configs/{created.json()['id']}/", {"is_default": True}, format="json"
    )
    assert default.status_code == 400 and "is_default" in default.json()


def test_the_admins_family_list_offers_embedding_and_rerank_models_and_a_saved_one_opens_with_its_own(
    admin_client, org
):
    config = ModelConfigFactory(
        organization=org,
        provider="jina",
        role="rerank",
        model="jina-reranker-v2-base-multilingual",
        base_url="https://api.jina.ai/v1",
    )
    page = admin_client.get(reverse("admin:agents_modelconfig_change", args=[config.pk]))
    form = page.context["adminform"].form

    offered = dict(
        (value, label)
        for _group, options in form.fields["model_family"].choices[1:]
        for value, label in options
    )
    assert offered["qwen-dashscope:embedding/text-embedding-v4"].endswith("(embedding)")
    assert offered["cohere:rerank/rerank-v3.5"].endswith("(reranking)")
    assert form["model_family"].value() == "jina:rerank/jina-reranker-v2-base-multilingual"
