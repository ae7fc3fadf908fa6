"""The chat request's SDK options, copied from a template, are the options ``client.post`` builds."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai._models import FinalRequestOptions

from agents.engine.llm import LLMError, OpenAICompatibleLLM
from agents.engine.request_options import CHAT_PATH, chat_request_template, request_options_like


def _posted(content: bytes | None, body: Any, options: dict[str, Any]) -> FinalRequestOptions:
    """What ``AsyncAPIClient.post`` hands to ``request()`` (its own construction, as in the SDK)."""
    return FinalRequestOptions.construct(
        method="post", url=CHAT_PATH, json_data=body, content=content, files=None, **options
    )


def _state(options: FinalRequestOptions) -> tuple[Any, ...]:
    # ``NotGiven`` defaults are compared by type: each construction makes its own instances.
    values = {
        name: type(value) if isinstance(value, openai.NotGiven | openai.Omit) else value
        for name, value in options.__dict__.items()
    }
    return (
        values,
        set(options.model_fields_set),
        options.__pydantic_extra__,
        options.__pydantic_private__,
    )


OPTIONS = [
    {"security": {"bearer_auth": True}},
    {"security": {"bearer_auth": True}, "headers": {"X-Gateway": "t0ken"}},
    {
        "security": {"bearer_auth": True},
        "headers": {"api-key": "k", "Authorization": openai.Omit()},
        "params": {"api-version": "2024-10-21"},
    },
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize(
    ("content", "body"), [(b'{"model":"m"}', None), (None, {"model": "m", "messages": []})]
)
def test_a_copied_request_has_the_options_post_builds(
    options: dict[str, Any], content: Any, body: Any
) -> None:
    template = chat_request_template(options)
    assert _state(request_options_like(template, content=content, json_data=body)) == _state(
        _posted(content, body, options)
    )


def test_requests_share_no_mutable_container_with_the_template_or_each_other() -> None:
    template = chat_request_template(OPTIONS[2])
    first = request_options_like(template, content=b"{}", json_data=None)
    second = request_options_like(template, content=b"{}", json_data=None)
    for name in ("headers", "params", "security"):
        assert getattr(first, name) is not getattr(second, name)
        assert getattr(first, name) is not getattr(template, name)
    first.headers["X-Later"] = "changed"  # type: ignore[index]
    assert "X-Later" not in second.headers  # type: ignore[operator]
    assert "X-Later" not in template.headers  # type: ignore[operator]
    assert template.content is None and template.json_data is None


async def test_a_chat_request_sends_the_template_options_through_the_sdk(monkeypatch: Any) -> None:
    seen: list[FinalRequestOptions] = []
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk", max_retries=0)

    async def request(cast_to: Any, options: FinalRequestOptions, **kwargs: Any) -> Any:
        seen.append(options)
        raise openai.APIConnectionError(request=None)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "request", request)
    llm = OpenAICompatibleLLM(
        base_url="http://127.0.0.1:9/v1", api_key="sk", model="m", client=client, default_headers={"X-G": "v"}
    )
    for _ in range(2):
        with pytest.raises(LLMError):
            await llm.chat([{"role": "user", "content": "hi"}])
    assert len(seen) == 2 and seen[0] is not seen[1]
    expected = _posted(None, seen[0].json_data, llm.request_options())
    assert _state(seen[0]) == _state(expected)
    assert seen[0].json_data == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
