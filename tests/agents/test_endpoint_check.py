""" "Check endpoint" against the scripted OpenAI-compatible server, through the real ``openai`` SDK.

A scripted "model" answers each probe as a model would (it calls the function when asked to, or when the
request forces a tool choice); the server, in each provider profile, refuses and reshapes what that provider
refuses and reshapes. The abilities the check reports must be the profile's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agents.endpoint_check_services import check_endpoint, check_endpoint_async
from agents.engine.llm import aclose_shared_clients
from agents.models import ModelConfig
from tests.fakes.http_service import LoopbackHTTPService, Scripted, running_http_service
from tests.fakes.openai_replies import call, error, text, tool_calls
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.provider_profiles import PROFILES, ProviderProfile

DECIDED = (
    "tool_call",
    "parallel_tool_calls",
    "forced_tool_choice",
    "json_mode",
    "stream_only",
    "reasoning_output",
    "vision",
)

# Ollama lists no tool_choice among the fields it takes and ignores it
# (https://docs.ollama.com/api/openai-compatibility): the model behind it never sees a forced choice.
IGNORES_TOOL_CHOICE = frozenset({"ollama"})


@pytest.fixture(autouse=True)
async def _close_llm_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


def a_model(*, follows_tool_choice: bool = True):
    """A scripted model: calls echo_word when asked (twice when asked twice), when a tool choice forces it,
    answers JSON when asked for JSON, names the colour of an image it is shown, and OK otherwise."""

    def answer(body: dict[str, Any]) -> Any:
        asked = json.dumps(body.get("messages") or [])
        forced = body.get("tool_choice") not in (None, "auto", "none")
        if body.get("tools") and "twice" in asked:
            return tool_calls(call("echo_word", {"word": "ping"}), call("echo_word", {"word": "pong"}))
        if body.get("tools") and ("Call the function" in asked or (forced and follows_tool_choice)):
            return tool_calls(call("echo_word", {"word": "ping"}))
        if (body.get("response_format") or {}).get("type") == "json_object":
            return text('{"ok": true}')
        if '"image_url"' in asked:
            return text("Red.")
        return text("OK")

    return answer


def endpoint(server: ScriptedOpenAIServer, *, base_path: str = "/v1", **fields: Any) -> ModelConfig:
    fields.setdefault("model", "scripted-model")
    return ModelConfig(
        name="checked", base_url=server.address + base_path, api_key="sk-scripted-test", **fields
    )


def script(server: ScriptedOpenAIServer, model, count: int = 20) -> None:
    server.script(*[model] * count)


async def test_an_endpoint_that_does_everything_reports_every_probe_working(scripted_llm):
    script(scripted_llm, a_model())

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.key_verified is True
    assert report.model_found is True  # no model list on this server: the chat confirmed it
    assert report.outcome("models").status == "not_checked"
    for probe in (
        "chat",
        "tool_call",
        "forced_tool_choice",
        "parallel_tool_calls",
        "json_mode",
        "streaming",
        "vision",
    ):
        assert report.outcome(probe).status == "works", report.outcome(probe)
    assert report.abilities == {
        "tool_call": True,
        "parallel_tool_calls": True,
        "forced_tool_choice": True,
        "json_mode": True,
        "stream_only": False,
        "reasoning_output": False,
        "vision": True,
    }
    assert report.outcome("reasoning").status == "refused"


async def test_a_model_that_sees_the_image_but_does_not_name_its_colour_is_reported_without_vision(
    scripted_llm,
):
    def blind(body: dict[str, Any]) -> Any:
        return text("I cannot view images.") if '"image_url"' in json.dumps(body) else a_model()(body)

    script(scripted_llm, blind)

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.abilities["vision"] is False
    assert report.outcome("vision").status == "refused"
    assert "I cannot view images." in report.outcome("vision").message
    (image,) = [
        part
        for request in scripted_llm.requests
        for message in request["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")  # a PNG, as sent


async def test_a_server_that_refuses_images_is_reported_without_vision_with_its_words(scripted_llm):
    def text_only(body: dict[str, Any]) -> Any:
        if '"image_url"' in json.dumps(body):
            return error(400, message="qwen2.5-7b-instruct is not a multimodal model")
        return a_model()(body)

    script(scripted_llm, text_only)

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.abilities["vision"] is False
    assert report.outcome("vision").status == "refused"
    assert "not a multimodal model" in report.outcome("vision").message


async def test_a_refused_key_stops_the_check_after_the_first_request(scripted_llm):
    scripted_llm.script(error(401, message="Incorrect API key provided", code="invalid_api_key"))

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.key_verified is False
    assert report.outcome("chat").status == "refused"
    assert "Incorrect API key provided" in report.outcome("chat").message
    assert "sk-scripted-test" not in json.dumps(report.as_data())
    assert {report.outcome(p).status for p in ("tool_call", "json_mode", "streaming")} == {"not_checked"}
    assert len(scripted_llm.requests) == 1


async def test_a_refused_tool_choice_is_reported_with_the_providers_message(scripted_llm):
    model = a_model()

    def refuses_forced_choice(body: dict[str, Any]) -> Any:
        if body.get("tools") and body.get("tool_choice") is not None:
            return error(400, message="tool_choice only supports auto")
        return model(body)

    script(scripted_llm, refuses_forced_choice)

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.outcome("forced_tool_choice").status == "refused"
    assert "tool_choice only supports auto" in report.outcome("forced_tool_choice").message
    assert report.abilities["forced_tool_choice"] is False
    assert report.abilities["tool_call"] is True


async def test_a_model_that_answers_one_call_at_a_time_has_no_parallel_tool_calls(scripted_llm):
    model = a_model()

    def one_at_a_time(body: dict[str, Any]) -> Any:
        if body.get("tools") and "twice" in json.dumps(body["messages"]):
            return tool_calls(call("echo_word", {"word": "ping"}))
        return model(body)

    script(scripted_llm, one_at_a_time)

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.outcome("parallel_tool_calls").status == "refused"
    assert report.abilities["parallel_tool_calls"] is False


async def test_a_rate_limited_probe_is_not_checked_and_decides_no_ability(scripted_llm):
    model = a_model()

    def rate_limits_json(body: dict[str, Any]) -> Any:
        if body.get("response_format"):
            return error(429, message="Rate limit reached", headers={"retry-after-ms": "1"})
        return model(body)

    script(scripted_llm, rate_limits_json)

    report = await check_endpoint_async(endpoint(scripted_llm))

    assert report.outcome("json_mode").status == "not_checked"
    assert "Rate limit reached" in report.outcome("json_mode").message
    assert "json_mode" not in report.abilities
    assert report.outcome("streaming").status == "works"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
async def test_the_check_reports_each_providers_abilities(scripted_llm, profile: ProviderProfile):
    scripted_llm.profile = profile
    script(scripted_llm, a_model(follows_tool_choice=profile.name not in IGNORES_TOOL_CHOICE))
    azure = profile.auth_header == "api-key"
    config = endpoint(
        scripted_llm,
        base_path=profile.base_path,
        provider="azure-openai" if azure else "custom",
        api_version="2024-10-21" if azure else "",
    )

    report = await check_endpoint_async(config)

    assert report.key_verified is True, report.as_data()
    assert {key: report.abilities.get(key) for key in DECIDED} == {
        key: profile.abilities[key] for key in DECIDED
    }
    if report.abilities["reasoning_output"]:
        assert report.abilities["reasoning_replay"] == profile.abilities["reasoning_replay"]


def test_an_endpoint_the_ssrf_guard_refuses_is_reported_and_receives_nothing(scripted_llm, settings):
    settings.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = []
    script(scripted_llm, a_model())

    report = check_endpoint(endpoint(scripted_llm))

    assert report.refused_by_guard
    assert report.key_verified is None
    assert {p.status for p in report.probes} == {"not_checked"}
    assert scripted_llm.requests == []


# --- the model list, against a plain loopback HTTP service ---------------------------------------


@pytest.fixture
def service() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as running:
        yield running


def service_endpoint(service: LoopbackHTTPService, **fields: Any) -> ModelConfig:
    fields.setdefault("base_url", service.base_url + "/v1")
    fields.setdefault("model", "scripted-model")
    return ModelConfig(name="listed", api_key="sk-listed-key", **fields)


def models_list(*names: str) -> Scripted:
    return Scripted(
        200, json.dumps({"object": "list", "data": [{"id": n, "object": "model"} for n in names]})
    )


async def test_the_model_list_verifies_the_key_and_finds_the_model(service):
    service.script("/v1/models", models_list("other-model", "scripted-model"))

    report = await check_endpoint_async(service_endpoint(service))

    assert report.outcome("models").status == "works"
    assert report.key_verified is True and report.model_found is True


async def test_a_model_missing_from_the_list_is_reported(service):
    service.script("/v1/models", models_list("other-model"))

    report = await check_endpoint_async(service_endpoint(service))

    assert report.outcome("models").status == "refused"
    assert "scripted-model" in report.outcome("models").message
    assert report.model_found is not True


async def test_a_key_refused_by_the_model_list_stops_the_check(service):
    service.script(
        "/v1/models", Scripted(401, json.dumps({"error": {"message": "Invalid API key", "type": "x"}}))
    )

    report = await check_endpoint_async(service_endpoint(service))

    assert report.key_verified is False
    assert "Invalid API key" in report.outcome("models").message
    assert report.outcome("chat").status == "not_checked"
    assert len(service.requests) == 1


async def test_the_check_sends_azures_key_header_api_version_and_the_extra_headers(service):
    service.script("/openai/deployments/d1/models", Scripted(404, json.dumps({"error": {"message": "nf"}})))
    config = service_endpoint(
        service,
        base_url=service.base_url + "/openai/deployments/d1",
        provider="azure-openai",
        api_version="2024-10-21",
        extra_headers=json.dumps({"X-Gateway-Key": "gw-secret-value"}),
    )

    report = await check_endpoint_async(config)

    assert report.outcome("models").status == "not_checked"  # a 404 list is tolerated
    listing = service.requests_to("/openai/deployments/d1/models")[0]
    assert listing.headers["api-key"] == "sk-listed-key"
    assert "authorization" not in listing.headers
    assert listing.headers["x-gateway-key"] == "gw-secret-value"
    assert listing.query["api-version"] == ["2024-10-21"]
    chat = service.requests_to("/openai/deployments/d1/chat/completions")[0]
    assert chat.headers["api-key"] == "sk-listed-key" and chat.query["api-version"] == ["2024-10-21"]
    assert "gw-secret-value" not in json.dumps(report.as_data())
