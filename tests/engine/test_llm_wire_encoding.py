"""The history as sent: the transcript's provider view strips and encodes each message once, and the request
body assembled from those pieces is byte for byte what the SDK's own encoder writes for the same request."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx2
import openai
import pytest

from agents.engine import metering
from agents.engine import transcript as transcript_module
from agents.engine.llm import OpenAICompatibleLLM, encoded_body, wire_json
from agents.engine.reasoning import wire_messages
from agents.engine.transcript import Transcript, WireView
from tests.fakes.openai_server import call, text, tool_calls

COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


def history() -> list[dict[str, Any]]:
    """Messages with what the encoder must get right: non-ASCII text, metadata keys, reasoning, tool calls."""
    return [
        {"role": "system", "content": "Answer in 中文 — briefly ✓", "_pinned": True},
        {"role": "user", "content": 'Find "orders"\n\tplease 🙂', "_tokens": (9, 1)},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "I should search.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "订单"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3 results \\ found", "_ms": 4},
        {"role": "assistant", "content": "Done.", "reasoning_content": "That was enough."},
        {"role": "user", "content": [{"type": "text", "text": "And invoices?"}]},
    ]


class Capture:
    """An SDK client whose transport records each request's raw body and headers, and answers ``COMPLETION``."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []

        def answer(request: httpx2.Request) -> httpx2.Response:
            self.bodies.append(request.content)
            self.headers.append(dict(request.headers))
            return httpx2.Response(200, json=COMPLETION)

        self.client = openai.AsyncOpenAI(
            base_url="http://model.test/v1",
            api_key="sk-test",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
        )

    def llm(self, **kwargs: Any) -> OpenAICompatibleLLM:
        return OpenAICompatibleLLM(
            base_url="http://model.test/v1", api_key="sk-test", model="m", client=self.client, **kwargs
        )


def transcript_of(messages: list[dict[str, Any]]) -> Transcript:
    transcript = Transcript(messages[:1])
    for message in messages[1:]:
        transcript.append(message)
    return transcript


@pytest.mark.parametrize("replay", [True, False])
@pytest.mark.parametrize(
    "request_kwargs",
    [
        {},
        {"tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": False, "temperature": 0.25},
        {"response_format": {"type": "json_object"}, "temperature": 0.0},
    ],
)
async def test_the_body_built_from_encoded_messages_is_the_bytes_the_sdk_writes(
    replay: bool, request_kwargs: dict[str, Any]
) -> None:
    capture = Capture()
    extra = {"top_k": 5, "temperature": 0.5, "chat_template_kwargs": {"enable_thinking": False}}
    llm = capture.llm(reasoning_replay=replay, extra_body=extra, max_output_tokens=64)
    transcript = transcript_of(history())

    await llm.chat(transcript.wire, **request_kwargs)  # assembled from the view's encoded messages
    await llm.chat(list(transcript.wire), **request_kwargs)  # a plain list: encoded by the SDK

    assembled, by_sdk = capture.bodies
    assert assembled == by_sdk
    sent = json.loads(assembled)
    assert sent["messages"] == wire_messages(transcript.wire, replay=replay)
    assert not any(key.startswith("_") for message in sent["messages"] for key in message)
    assert [list(h) for h in capture.headers[:1]] == [list(h) for h in capture.headers[1:]]
    assert capture.headers[0]["content-type"] == "application/json"
    assert capture.headers[0]["content-length"] == str(len(assembled))


async def test_a_streamed_request_sends_the_same_body_from_the_view_as_from_a_list(
    scripted_llm, make_llm
) -> None:
    scripted_llm.script(text("one"), text("two"))
    llm = make_llm()
    transcript = transcript_of(history())

    assert "".join([d async for d in llm.stream_chat(transcript.wire, temperature=0.5)]) == "one"
    assert "".join([d async for d in llm.stream_chat(list(transcript.wire), temperature=0.5)]) == "two"

    from_view, from_list = scripted_llm.requests
    assert from_view == from_list
    assert from_view["stream"] is True


async def test_a_stream_only_endpoint_assembles_its_body_from_the_view(scripted_llm, make_llm) -> None:
    scripted_llm.script(
        tool_calls(call("search", {"q": "x"}, id="c9")), tool_calls(call("search", {"q": "x"}))
    )
    llm = OpenAICompatibleLLM(  # make_llm closes the shared client afterwards
        base_url=scripted_llm.base_url, api_key="sk-test", model="m", abilities={"stream_only": True}
    )
    transcript = transcript_of(history())

    reply = await llm.chat(transcript.wire, tools=TOOLS)
    await llm.chat(list(transcript.wire), tools=TOOLS)

    assert [c.name for c in reply.tool_calls] == ["search"]
    from_view, from_list = scripted_llm.requests
    assert from_view == from_list


def test_encoded_body_writes_what_the_sdk_encoder_writes() -> None:
    from openai._utils._json import openapi_dumps

    messages = wire_messages(history(), replay=True)
    body = {"model": "m", "messages": messages, "temperature": 1.5, "tools": TOOLS, "n": None, "x": [1, "é"]}

    assert encoded_body(body, [wire_json(m) for m in messages]) == openapi_dumps(body)


async def test_each_message_is_stripped_and_encoded_once_however_many_calls(monkeypatch) -> None:
    encoded: list[dict[str, Any]] = []

    def counting(value: Any) -> bytes:
        encoded.append(value)
        return wire_json(value)

    monkeypatch.setattr(transcript_module, "wire_json", counting)
    capture = Capture()
    llm = capture.llm()
    transcript = Transcript(history()[:2])
    for turn in range(5):
        transcript.append({"role": "assistant", "content": None, "tool_calls": [_call(turn)]})
        transcript.append({"role": "tool", "tool_call_id": f"t{turn}", "content": f"result {turn}"})
        await llm.chat(transcript.wire, tools=TOOLS)

    assert len(encoded) == len(transcript.wire) == 12
    assert json.loads(capture.bodies[-1])["messages"] == wire_messages(transcript.wire, replay=True)


def _call(turn: int) -> dict[str, Any]:
    return {"id": f"t{turn}", "type": "function", "function": {"name": "search", "arguments": "{}"}}


async def test_a_message_merged_into_the_last_is_sent_as_merged() -> None:
    capture = Capture()
    llm = capture.llm()
    transcript = Transcript([{"role": "user", "content": "first"}])
    await llm.chat(transcript.wire)

    transcript.append({"role": "user", "content": "second"})
    await llm.chat(transcript.wire)

    assert json.loads(capture.bodies[-1])["messages"] == [{"role": "user", "content": "first\n\nsecond"}]


async def test_a_replaced_history_is_sent_whole_after_compaction() -> None:
    capture = Capture()
    llm = capture.llm()
    transcript = transcript_of(history())
    await llm.chat(transcript.wire)

    transcript.replace([{"role": "system", "content": "summary"}, {"role": "user", "content": "go on"}])
    await llm.chat(transcript.wire)

    assert json.loads(capture.bodies[-1])["messages"] == [
        {"role": "system", "content": "summary"},
        {"role": "user", "content": "go on"},
    ]


NOTE = {"role": "user", "content": "a note"}
EDITS: dict[str, Callable[[WireView], Any]] = {
    "set last": lambda w: w.__setitem__(-1, NOTE),
    "set slice": lambda w: w.__setitem__(slice(1, 3), [NOTE]),
    "insert": lambda w: w.insert(1, NOTE),
    "delete": lambda w: w.__delitem__(2),
    "delete slice": lambda w: w.__delitem__(slice(-3, None)),
    "pop": lambda w: w.pop(),
    "pop first": lambda w: w.pop(0),
    "remove": lambda w: w.remove(w[1]),
    "reverse": lambda w: w.reverse(),
    "clear and extend": lambda w: (w.clear(), w.extend([NOTE])),
    "multiply": lambda w: w.__imul__(2),
    "add": lambda w: w.__iadd__([NOTE]),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
@pytest.mark.parametrize("replay", [True, False])
def test_any_change_to_the_view_is_what_is_sent_next(edit: Callable[[WireView], Any], replay: bool) -> None:
    view = transcript_of(history()).wire
    view.sent(replay=replay)
    view.sent(replay=not replay)

    edit(view)
    sent = view.sent(replay=replay)

    assert sent.messages == wire_messages(list(view), replay=replay)
    assert sent.encoded == [wire_json(m) for m in sent.messages]
    assert metering.prompt_bound(view) == metering.prompt_bound(list(view))


async def test_the_prompt_bound_counts_each_message_of_the_history_once(monkeypatch) -> None:
    counted: list[dict[str, Any]] = []
    bound_of = metering._message_bound

    def counting(message: dict[str, Any]) -> int:
        counted.append(message)
        return bound_of(message)

    monkeypatch.setattr(metering, "_message_bound", counting)
    transcript = Transcript(history())
    bounds = []
    for turn in range(3):
        transcript.append({"role": "assistant", "content": None, "tool_calls": [_call(turn)]})
        transcript.append({"role": "tool", "tool_call_id": f"t{turn}", "content": f"result {turn}"})
        bounds.append(metering.prompt_bound(transcript.wire, TOOLS))
    assert len(counted) == len(transcript.wire)

    assert bounds[-1] == metering.prompt_bound(list(transcript.wire), TOOLS)


def test_the_reasoning_replay_setting_has_its_own_record() -> None:
    view = transcript_of(history()).wire

    replayed = view.sent(replay=True).messages
    kept_back = view.sent(replay=False).messages

    assert replayed[2]["reasoning_content"] == "I should search."
    assert "reasoning_content" not in replayed[4]
    assert not any("reasoning_content" in m for m in kept_back)


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_a_copy_of_the_view_remembers_nothing_of_the_original(copier: Callable[[Any], Any]) -> None:
    view = transcript_of(history()[:2]).wire
    view.sent(replay=True)
    twin = copier(view)

    view.append({"role": "assistant", "content": "original"})
    twin.append({"role": "assistant", "content": "copy"})

    assert isinstance(twin, WireView)
    assert view.sent(replay=True).messages[-1]["content"] == "original"
    assert twin.sent(replay=True).messages[-1]["content"] == "copy"


async def test_a_message_the_engine_cannot_encode_goes_through_the_sdk_encoder() -> None:
    capture = Capture()
    llm = capture.llm()
    when = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    transcript = transcript_of([*history(), {"role": "user", "content": "at", "when": when}])

    await llm.chat(transcript.wire)
    await llm.chat(list(transcript.wire))

    assembled, by_sdk = capture.bodies
    assert assembled == by_sdk
    assert json.loads(assembled)["messages"][-1]["when"] == when.isoformat()


def tool(name: str, **properties: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {
        "type": "function",
        "function": {"name": name, "description": f"{name} — 搜索", "parameters": parameters},
    }


async def test_the_tools_sent_each_turn_are_the_bytes_the_sdk_writes_as_the_list_changes() -> None:
    capture = Capture()
    llm = capture.llm()
    transcript = transcript_of(history())
    tools = [tool("search", q={"type": "string"}), tool("fetch", url={"type": "string"}), tool("noop")]
    renamed = tool("search", q={"type": "string", "minLength": 1})
    turns: list[list[Any]] = [
        tools,
        tools,  # the same list again
        tools[1:],  # a selection of them
        [renamed, *tools[1:]],  # one replaced by a new schema
        [*tools, tool("late")],  # one more
        [dict(tools[0])],  # a copy
    ]
    for turn in turns:
        await llm.chat(transcript.wire, tools=turn, tool_choice="auto")  # assembled, the tools remembered
        await llm.chat(list(transcript.wire), tools=turn, tool_choice="auto")  # encoded by the SDK

    assembled, by_sdk = capture.bodies[::2], capture.bodies[1::2]
    assert assembled == by_sdk
    assert [json.loads(body)["tools"] for body in assembled] == turns


def test_each_tool_is_encoded_once_across_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.engine import llm as llm_module

    encoded: list[Any] = []

    def counting(value: Any) -> bytes:
        encoded.append(value)
        return wire_json(value)

    monkeypatch.setattr(llm_module, "wire_json", counting)
    tools = [tool("search", q={"type": "string"}), tool("fetch")]
    messages = [wire_json({"role": "user", "content": "hi"})]

    first = encoded_body({"model": "m", "messages": [], "tools": list(tools)}, messages)
    again = encoded_body({"model": "m", "messages": [], "tools": list(tools)}, messages)
    subset = encoded_body({"model": "m", "messages": [], "tools": tools[1:]}, messages)

    assert first == again
    assert json.loads(subset)["tools"] == tools[1:]
    assert [value for value in encoded if isinstance(value, dict)] == tools
