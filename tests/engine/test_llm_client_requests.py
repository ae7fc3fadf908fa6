"""The engine's SDK client builds a chat request itself (the endpoint's URL parsed once, a bytes body): the
request is the one the SDK builds for the same options, and whatever it does not cover goes to the SDK."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest
from openai._base_client import FinalRequestOptions

from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from agents.engine.llm_client import _BoundedRetriesClient
from tests.fakes.openai_server import error, text

BODY = b'{"model":"m","messages":[{"role":"user","content":"\xe4\xbd\xa0\xe5\xa5\xbd"}]}'


def client(**kwargs: Any) -> _BoundedRetriesClient:
    return _BoundedRetriesClient(
        base_url=kwargs.pop("base_url", "https://models.example/v1"),
        api_key="sk-test",
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
        **kwargs,
    )


def options(**kwargs: Any) -> Any:
    fields: dict[str, Any] = {"method": "post", "url": "/chat/completions", "content": BODY}
    fields.update(kwargs)
    return FinalRequestOptions.construct(**{"security": {"bearer_auth": True}, **fields})


def as_sent(request: httpx2.Request) -> tuple[Any, ...]:
    return (
        request.method,
        str(request.url),
        request.url.raw_path,
        request.headers.multi_items(),
        request.headers.raw,
        request.content,
        type(request.stream),
        request.extensions,
    )


CASES = {
    "plain": ({}, {}),
    "second attempt": ({}, {"retries_taken": 1}),
    "no idempotency key": ({}, {"idempotency_key": None}),
    "headers of the endpoint": (
        {"default_headers": {"X-Gateway-Token": "t0ken"}},
        {"headers": {"X-Trace": "a", "Authorization": openai.Omit(), "api-key": "sk-azure"}},
    ),
    "a timeout of the request": ({"timeout": httpx2.Timeout(5.0, connect=1.0)}, {"timeout": 2.5}),
    "no timeout": ({}, {"timeout": None}),
    "a base path without slash": ({"base_url": "http://10.0.0.5:8000/openai/deployments/gpt"}, {}),
}


@pytest.mark.parametrize(("client_kwargs", "option_kwargs"), CASES.values(), ids=CASES.keys())
async def test_a_bytes_request_is_the_one_the_sdk_builds(
    client_kwargs: dict[str, Any], option_kwargs: dict[str, Any]
) -> None:
    retries = option_kwargs.pop("retries_taken", 0)
    ours = client(**client_kwargs)
    opts = options(**{"idempotency_key": "fixed", **option_kwargs})

    built = ours._build_request(opts, retries_taken=retries)
    by_sdk = openai.AsyncOpenAI._build_request(ours, opts, retries_taken=retries)
    again = ours._build_request(opts, retries_taken=retries)  # the parsed URL reused

    assert as_sent(built) == as_sent(by_sdk) == as_sent(again)
    assert built.headers["content-length"] == str(len(BODY))
    await ours.close()


def changed(what: str, ours: _BoundedRetriesClient, opts: Any) -> Any:
    """``opts`` for the next request, after one input of its headers changed."""
    if what == "the API key":
        ours.api_key = "sk-rotated"
    elif what == "a header of the endpoint":
        ours._custom_headers = {"X-Gateway-Token": "other"}
    elif what == "a header of the HTTP client":
        ours._client.headers["X-Client"] = "1"
    elif what == "a header of the request":
        return options(idempotency_key="fixed", headers={"X-Trace": "b"})
    elif what == "an omitted header":
        return options(idempotency_key="fixed", headers={"Authorization": openai.Omit()})
    elif what == "the base URL":
        ours.base_url = "http://10.0.0.6/v2"
    elif what == "the retry count set by hand":
        return options(idempotency_key="fixed", headers={"x-stainless-retry-count": "7"})
    elif what == "nothing":
        pass
    return opts


CHANGES = [
    "nothing",
    "the API key",
    "a header of the endpoint",
    "a header of the HTTP client",
    "a header of the request",
    "an omitted header",
    "the base URL",
    "the retry count set by hand",
]


@pytest.mark.parametrize("what", CHANGES)
async def test_the_remembered_headers_follow_a_change_of_what_they_are_made_of(what: str) -> None:
    ours = client(default_headers={"X-Gateway-Token": "t0ken"})
    opts = options(idempotency_key="fixed")
    ours._build_request(opts)

    opts = changed(what, ours, opts)
    for retries in (0, 1):
        built = ours._build_request(opts, retries_taken=retries)
        by_sdk = openai.AsyncOpenAI._build_request(ours, opts, retries_taken=retries)
        assert as_sent(built) == as_sent(by_sdk)
    await ours.close()


async def test_the_sdk_builds_an_endpoints_headers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = client()
    built: list[int] = []
    sdk_build_headers = ours._build_headers

    def counted(options: Any, *, retries_taken: int = 0) -> httpx2.Headers:
        built.append(retries_taken)
        return sdk_build_headers(options, retries_taken=retries_taken)

    monkeypatch.setattr(ours, "_build_headers", counted)
    requests = [
        ours._build_request(options(content=body), retries_taken=n) for n, body in enumerate([b"{}", BODY])
    ]

    assert len(built) == 1
    assert [r.headers["x-stainless-retry-count"] for r in requests] == ["0", "1"]
    assert [r.content for r in requests] == [b"{}", BODY]
    assert requests[1].headers["content-length"] == str(len(BODY))
    await ours.close()


FALLBACKS = {
    "a JSON body": ({}, {"content": None, "json_data": {"model": "m"}}),
    "a query": ({}, {"params": {"api-version": "2024-10-21"}}),
    "a query of the client": ({"default_query": {"api-version": "2024-10-21"}}, {}),
    "a query in the path": ({}, {"url": "/chat/completions?x=1"}),
    "extra JSON": ({}, {"content": None, "json_data": {"a": 1}, "extra_json": {"b": 2}}),
    "a GET": ({}, {"method": "get", "content": None, "url": "/models"}),
}


@pytest.mark.parametrize(("client_kwargs", "option_kwargs"), FALLBACKS.values(), ids=FALLBACKS.keys())
async def test_any_other_request_is_built_by_the_sdk(
    client_kwargs: dict[str, Any], option_kwargs: dict[str, Any]
) -> None:
    ours = client(**client_kwargs)
    opts = options(idempotency_key="fixed", **option_kwargs)

    assert as_sent(ours._build_request(opts)) == as_sent(openai.AsyncOpenAI._build_request(ours, opts))
    await ours.close()


async def test_a_retried_request_sends_the_same_body_and_counts_its_retry(scripted_llm) -> None:
    scripted_llm.script(error(500), text("ok"))
    llm = OpenAICompatibleLLM(base_url=scripted_llm.base_url, api_key="sk-test", model="m", max_retries=1)
    try:
        from agents.engine.transcript import Transcript

        transcript = Transcript([{"role": "user", "content": "hi"}])
        reply = await llm.chat(transcript.wire)
    finally:
        await aclose_shared_clients()

    assert reply.content == "ok"
    first, second = scripted_llm.requests
    assert first == second == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert [h["x-stainless-retry-count"] for h in scripted_llm.headers] == ["0", "1"]
