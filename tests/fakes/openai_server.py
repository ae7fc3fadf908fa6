"""A scripted OpenAI-compatible chat-completions server for tests.

A real HTTP server on 127.0.0.1 (random port, background thread) that answers
``POST /v1/chat/completions`` the way OpenAI does, streaming (SSE) and not. Tests queue
replies with :meth:`ScriptedOpenAIServer.script`; each request pops one, in order
(:func:`event_stream` sends a raw, paced event stream instead of a scripted answer). The code
under test reaches it through the real ``openai`` SDK, so retries, timeouts, SSE parsing and
error mapping are exercised for real.

    server.script(text("Hello"), tool_calls(call("search", {"q": "x"})), error(500))
    llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="sk-test", model="m")

When the queue is empty the server answers HTTP 500 (marked not retryable) saying
"scripted LLM: no reply scripted for this request", so a test fails loudly instead of hanging.

A :class:`ProviderProfile` (``server.profile = KIMI_MOONSHOT``, one per provider in
:data:`~tests.fakes.provider_profiles.PROFILES`) makes the server behave as that provider documents: it
refuses the requests the provider refuses (before any scripted reply is taken), serves under the provider's
base path, and shapes every reply as the provider sends it (reasoning, streamed tool-call deltas, usage,
``content`` next to tool calls, tool calls written as text). ``server.quirks`` counts what the profile did
(names in :data:`~tests.fakes.provider_profiles.QUIRKS`), so a test can assert that the behaviour it relies
on was exercised; ``server.headers`` records each request's headers.

``POST …/embeddings`` answers as OpenAI does, with the deterministic vectors of :mod:`tests.fakes.embeddings`
(``server.embedding_dimension`` long, 64 by default) unless a reply was queued for it with
:meth:`ScriptedOpenAIServer.script_embeddings` (an :func:`error`, :func:`malformed` or :func:`hang`, or a
callable of the request body returning one). Its requests are recorded apart, in ``embedding_requests`` and
``embedding_headers``, and take nothing from the chat replies' queue.

``POST …/rerank`` (and DashScope's ``…/reranks``) answers as Jina AI's reranker does, scoring each document by
the share of the query's words it holds (:mod:`tests.fakes.rerank`), unless a reply was queued for it with
:meth:`ScriptedOpenAIServer.script_rerank` (the same kinds of replies). Its requests are recorded apart, in
``rerank_requests``, ``rerank_headers`` and ``rerank_paths``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.fakes.embeddings import DEFAULT_DIMENSION, embeddings_answer
from tests.fakes.openai_replies import (
    ErrorReply,
    HangReply,
    MalformedReply,
    Reply,
    ReplySource,
    TextReply,
    ToolCallSpec,
    ToolCallsReply,
    call,
    context_length_error,
    error,
    hang,
    malformed,
    text,
    tool_calls,
)
from tests.fakes.provider_profiles import (
    DEEPSEEK_REASONING_NOT_PASSED_BACK,
    DEEPSEEK_THINKING,
    PROFILES,
    ProviderProfile,
    Request,
    bare_json_tool_calls,
    error_reply,
    hermes_tool_calls,
    refusal_of,
)
from tests.fakes.rerank import rerank_answer
from tests.fakes.threaded_server import OwnedHTTPServer, ThreadedServer

__all__ = [
    "DEEPSEEK_REASONING_NOT_PASSED_BACK",
    "DEEPSEEK_THINKING",
    "NO_REPLY_MESSAGE",
    "PROFILES",
    "ProviderProfile",
    "ErrorReply",
    "EventStreamReply",
    "HangReply",
    "MalformedReply",
    "Reply",
    "ReplySource",
    "ScriptedOpenAIServer",
    "TextReply",
    "ToolCallSpec",
    "ToolCallsReply",
    "call",
    "context_length_error",
    "error",
    "event_stream",
    "hang",
    "malformed",
    "text",
    "tool_calls",
]

NO_REPLY_MESSAGE = "scripted LLM: no reply scripted for this request"


# --- provider profiles (see tests.fakes.provider_profiles) ----------------------------------------


def _has_tool_turns(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
        for m in body.get("messages") or ()
    )


def _lacks_reasoning_back(body: dict[str, Any]) -> bool:
    """Whether an assistant message with tool calls in the request has no ``reasoning_content``."""
    return any(
        isinstance(m, dict)
        and m.get("role") == "assistant"
        and m.get("tool_calls")
        and "reasoning_content" not in m
        for m in body.get("messages") or ()
    )


@dataclass(frozen=True)
class EventStreamReply:
    """A raw ``text/event-stream`` body, written piece by piece (see :func:`event_stream`)."""

    pieces: tuple[bytes | float, ...]


def event_stream(*pieces: bytes | float) -> EventStreamReply:
    """A streamed answer sent verbatim, to script what :func:`text` cannot: odd SSE framing,
    comments, a provider that stalls mid-answer.

    Each ``bytes`` piece is written and flushed as its own HTTP chunk; a number pauses that many
    seconds. The body then ends normally. A reset or stop during a pause drops the connection.
    """
    return EventStreamReply(pieces)


# --- the server ------------------------------------------------------------------------------


class ScriptedOpenAIServer(ThreadedServer):
    """A loopback OpenAI-compatible server answering from a queue of scripted replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        # The client's (host, port) of each request: one port for several requests means one connection.
        self.peers: list[tuple[str, int]] = []
        # The headers of each request (names lower-cased), to check what a client sent.
        self.headers: list[dict[str, str]] = []
        self.profile: ProviderProfile | None = None
        self.quirks: Counter[str] = Counter()
        self._queue: deque[ReplySource | EventStreamReply] = deque()
        # The embeddings endpoint: its requests and headers, its queued replies, the vectors' length.
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_headers: list[dict[str, str]] = []
        self.embedding_dimension = DEFAULT_DIMENSION
        self._embedding_queue: deque[ReplySource] = deque()
        # The rerank endpoint: its requests, headers and paths, its queued replies.
        self.rerank_requests: list[dict[str, Any]] = []
        self.rerank_headers: list[dict[str, str]] = []
        self.rerank_paths: list[str] = []
        self._rerank_queue: deque[ReplySource] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # Set to wake every pending hang/latency wait (on reset and stop); replaced afterwards.
        self._wake = threading.Event()

    # public API

    @property
    def base_url(self) -> str:
        """The API's base URL: ``/v1``, or the profile's base path (Azure's deployment path, DashScope's...)."""
        path = self.profile.base_path if self.profile is not None else "/v1"
        return f"{self.address}{path}"

    @property
    def pending(self) -> int:
        """Replies scripted but not consumed yet."""
        with self._lock:
            return len(self._queue)

    @property
    def last_request(self) -> dict[str, Any]:
        """The body of the most recent request (raises when none arrived)."""
        with self._lock:
            if not self.requests:
                raise AssertionError("the scripted LLM received no request")
            return self.requests[-1]

    async def until_received(self, count: int) -> None:
        """Wait (without blocking the loop) until ``count`` requests have arrived.

        A test that cancels a run must wait for its in-flight request first: cancelled while on the
        wire, the request could arrive after ``reset()`` and take a reply scripted for what follows.
        """
        deadline = time.monotonic() + 10
        while len(self.requests) < count and time.monotonic() < deadline:  # noqa: ASYNC110 - server thread
            await asyncio.sleep(0.01)
        assert len(self.requests) >= count, f"{len(self.requests)} of {count} requests arrived"

    def script(self, *replies: ReplySource | EventStreamReply) -> None:
        """Append replies to the queue; each incoming request consumes one, in order.

        A callable receives the parsed request body and returns the reply to send.
        """
        with self._lock:
            self._queue.extend(replies)

    def script_embeddings(self, *replies: ReplySource) -> None:
        """Queue replies for the next embeddings requests (each takes one); when none is queued the
        request is answered with the fake model's vectors."""
        with self._lock:
            self._embedding_queue.extend(replies)

    def script_rerank(self, *replies: ReplySource) -> None:
        """Queue replies for the next rerank requests (each takes one); when none is queued the request is
        answered with the fake reranker's scores."""
        with self._lock:
            self._rerank_queue.extend(replies)

    def reset(self) -> None:
        """Forget queued replies, recorded requests and the profile; wake any hanging reply."""
        with self._lock:
            self._rerank_queue.clear()
            self.rerank_requests.clear()
            self.rerank_headers.clear()
            self.rerank_paths.clear()
            self._embedding_queue.clear()
            self.embedding_requests.clear()
            self.embedding_headers.clear()
            self.embedding_dimension = DEFAULT_DIMENSION
            self._queue.clear()
            self.requests.clear()
            self.peers.clear()
            self.headers.clear()
            self.profile = None
            self.quirks.clear()
            self._wake.set()
            self._wake = threading.Event()

    def before_stop(self) -> None:
        self._wake.set()

    def count(self, quirk: str) -> None:
        """Count one exercised quirk (thread-safe; the handler threads call it)."""
        with self._lock:
            self.quirks[quirk] += 1

    # used by the handler

    def _take_embedding(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[Reply | None, int, threading.Event]:
        """The queued reply for an embeddings request (None: answer with the fake vectors)."""
        with self._lock:
            self.embedding_requests.append(body)
            self.embedding_headers.append(headers)
            source = self._embedding_queue.popleft() if self._embedding_queue else None
            dimension, wake = self.embedding_dimension, self._wake
        reply = source if source is None or isinstance(source, Reply) else source(body)
        return reply, dimension, wake

    def _take_rerank(
        self, body: dict[str, Any], headers: dict[str, str], path: str
    ) -> tuple[Reply | None, threading.Event]:
        """The queued reply for a rerank request (None: answer with the fake reranker's scores)."""
        with self._lock:
            self.rerank_requests.append(body)
            self.rerank_headers.append(headers)
            self.rerank_paths.append(path)
            source = self._rerank_queue.popleft() if self._rerank_queue else None
            wake = self._wake
        reply = source if source is None or isinstance(source, Reply) else source(body)
        return reply, wake

    def _take(
        self, request: Request, peer: tuple[str, int]
    ) -> tuple[Reply | EventStreamReply | None, threading.Event, int, ProviderProfile | None]:
        body = request.body
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            self.peers.append(peer)
            wake = self._wake
            number = next(self._ids)
            profile = self.profile
            if profile is not None and (refused := refusal_of(profile, request)) is not None:
                quirk, refusal = refused
                self.quirks[quirk] += 1
                return error_reply(refusal), wake, number, profile
            if profile is not None and profile.reasoning_back_required and _lacks_reasoning_back(body):
                self.quirks["reasoning_back_refused"] += 1
                return ErrorReply(400, profile.refusal, "invalid_request_error"), wake, number, profile
            if profile is not None and profile.reasoning_back_required and _has_tool_turns(body):
                self.quirks["reasoning_back_accepted"] += 1
            source = self._queue.popleft() if self._queue else None
        reply = source if source is None or isinstance(source, Reply | EventStreamReply) else source(body)
        return self._with_profile(reply, body, profile), wake, number, profile

    def _with_profile(
        self, reply: Reply | EventStreamReply | None, body: dict[str, Any], profile: ProviderProfile | None
    ) -> Reply | EventStreamReply | None:
        if profile is None:
            return reply
        if isinstance(reply, ToolCallsReply):
            reply = self._tool_calls_as_profile(reply, body, profile)
        if (
            profile.reasoning is not None
            and isinstance(reply, TextReply | ToolCallsReply)
            and reply.reasoning_content is None
        ):
            self.count("reasoning_sent")
            reply = dataclasses.replace(reply, reasoning_content=profile.reasoning)
        if isinstance(reply, ErrorReply):
            if reply.status == 429:
                self.count("rate_limited")
            if profile.context_length is not None and reply.message == profile.context_length.message:
                self.count("context_length")
        return reply

    def _tool_calls_as_profile(
        self, reply: ToolCallsReply, body: dict[str, Any], profile: ProviderProfile
    ) -> ToolCallsReply | TextReply:
        one_only = profile.parallel == "one" or (
            profile.parallel == "on_request" and body.get("parallel_tool_calls") is not True
        )
        if len(reply.calls) > 1 and (one_only or body.get("parallel_tool_calls") is False):
            self.count("parallel_reduced_to_one")
            reply = dataclasses.replace(reply, calls=reply.calls[:1])
        choice = body.get("tool_choice")
        forced = choice == "required" or isinstance(choice, dict)
        if profile.tool_calls_as_text and body.get("tools") and not forced:
            # No tool parser reads the model's output: its call stays text in content.
            self.count("tool_calls_as_text")
            calls = [(c.name, c.arguments) for c in reply.calls]
            write = hermes_tool_calls if profile.tool_calls_as_text == "hermes" else bare_json_tool_calls
            written = write(calls)
            return TextReply(
                written, reply.reasoning_content, reply.usage, reply.latency, omit_usage=reply.omit_usage
            )
        return reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Without this each small SSE/JSON write waits on delayed ACKs (~40 ms a request on loopback).
    disable_nagle_algorithm = True
    server: OwnedHTTPServer
    _profile: ProviderProfile | None = None  # the profile the current request was taken under

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = urlsplit(self.path)
        if url.path.rstrip("/").endswith("/embeddings"):
            try:
                self._embeddings(raw)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return
        if url.path.rstrip("/").endswith(("/rerank", "/reranks")):
            try:
                self._rerank(raw, url.path)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return
        if not url.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error_body(f"scripted LLM: unknown path {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, _error_body("scripted LLM: request body is not JSON", None))
            return
        request = Request(
            body=body,
            path=url.path,
            query=dict(parse_qsl(url.query)),
            headers={name.lower(): value for name, value in self.headers.items()},
        )
        try:
            reply, wake, number, profile = self.server.owner._take(request, self.client_address[:2])
        except Exception as exc:  # a scripted callable failed: make the test fail loudly
            self._send_json(
                500, _error_body(f"scripted LLM: reply callable raised {exc!r}", None), retry=False
            )
            return
        if reply is None:
            self._send_json(500, _error_body(NO_REPLY_MESSAGE, "no_reply_scripted"), retry=False)
            return
        self._profile = profile
        try:
            self._answer(body, reply, wake, f"chatcmpl-scripted-{number}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _count(self, quirk: str) -> None:
        if self._profile is not None:
            self.server.owner.count(quirk)

    def _embeddings(self, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, _error_body("scripted LLM: request body is not JSON", None))
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            reply, dimension, wake = self.server.owner._take_embedding(body, headers)
        except Exception as exc:  # a scripted callable failed: make the test fail loudly
            self._send_json(
                500, _error_body(f"scripted LLM: reply callable raised {exc!r}", None), retry=False
            )
            return
        self._side_reply(reply, wake, lambda: embeddings_answer(body, dimension), "embeddings")

    def _rerank(self, raw: bytes, path: str) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, _error_body("scripted LLM: request body is not JSON", None))
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            reply, wake = self.server.owner._take_rerank(body, headers, path)
        except Exception as exc:  # a scripted callable failed: make the test fail loudly
            self._send_json(
                500, _error_body(f"scripted LLM: reply callable raised {exc!r}", None), retry=False
            )
            return
        self._side_reply(reply, wake, lambda: rerank_answer(body), "rerank")

    def _side_reply(
        self, reply: Reply | None, wake: threading.Event, answer: Callable[[], dict[str, Any]], kind: str
    ) -> None:
        """Send a queued reply of an endpoint beside the chat (a hang, an error, a malformed body), or, with
        none, ``answer()`` (its ``ValueError`` a 400)."""
        if isinstance(reply, HangReply):
            if wake.wait(reply.seconds):
                self._abort()
                return
            reply = reply.then
        if isinstance(reply, ErrorReply):
            if reply.latency and wake.wait(reply.latency):
                self._abort()
                return
            self._send_json(reply.status, _error_body(reply.message, reply.code, reply.type), reply.headers)
        elif isinstance(reply, MalformedReply):
            self._send_bytes(reply.status, reply.body, reply.content_type)
        elif reply is None:
            try:
                payload = answer()
            except ValueError as exc:
                self._send_json(400, _error_body(f"scripted LLM: {exc}", "invalid_input"))
                return
            self._send_json(200, payload)
        else:
            self._send_json(
                500,
                _error_body(f"scripted LLM: {type(reply).__name__} is no {kind} reply", None),
                retry=False,
            )

    # replies

    def _answer(
        self, body: dict[str, Any], reply: Reply | EventStreamReply, wake: threading.Event, cid: str
    ) -> None:
        if isinstance(reply, EventStreamReply):
            self._event_stream(reply, wake)
            return
        if isinstance(reply, HangReply):
            if wake.wait(reply.seconds):
                self._abort()
                return
            reply = reply.then or TextReply("")
        latency = getattr(reply, "latency", 0.0)
        if latency and wake.wait(latency):
            self._abort()
            return
        if isinstance(reply, ErrorReply):
            self._send_json(reply.status, _error_body(reply.message, reply.code, reply.type), reply.headers)
        elif isinstance(reply, MalformedReply):
            self._send_bytes(reply.status, reply.body, reply.content_type)
        elif body.get("stream"):
            self._stream(body, reply, cid)
        else:
            self._send_json(200, self._completion(body, reply, cid))

    def _completion(
        self, body: dict[str, Any], reply: TextReply | ToolCallsReply, cid: str
    ) -> dict[str, Any]:
        profile = self._profile
        completion = _completion(body, reply, cid, _reasoning_key(profile))
        if profile is None:
            return completion
        message = completion["choices"][0]["message"]
        if isinstance(reply, ToolCallsReply):
            if message["content"] is None and profile.content_with_tool_calls == "empty":
                message["content"] = ""
                self._count("content_empty_with_tool_calls")
            if profile.finish_with_tool_calls != "tool_calls":
                completion["choices"][0]["finish_reason"] = profile.finish_with_tool_calls
                self._count("finish_stop_with_tool_calls")
        if profile.usage == "absent":
            completion.pop("usage", None)
            self._count("usage_absent")
        return completion

    def _stream(self, body: dict[str, Any], reply: TextReply | ToolCallsReply, cid: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        created = int(time.time())
        model = body.get("model", "scripted-model")
        profile = self._profile

        def event(
            delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None, **extra: Any
        ) -> None:
            chunk: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                **extra,
            }
            if usage is not None:
                chunk["usage"] = usage
            self._write_chunk(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")

        if profile is not None and profile.prompt_filter_chunk:
            filtered = [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}]
            event(None, prompt_filter_results=filtered)
            self._count("prompt_filter_chunk")
        tools = isinstance(reply, ToolCallsReply)
        first: dict[str, Any] = {"role": "assistant", "content": ""}
        if tools and profile is not None:
            if profile.content_with_tool_calls == "null":
                first["content"] = None
            else:
                self._count("content_empty_with_tool_calls")
        event(first)
        if reply.reasoning_content:
            for piece in _split_words(reply.reasoning_content):
                event({_reasoning_key(profile): piece})
        if isinstance(reply, TextReply):
            pieces = (
                _split_chars(reply.content, reply.chunk_size)
                if reply.chunk_size
                else _split_words(reply.content)
            )
            for sent, piece in enumerate(pieces):
                if reply.die_after_chunks is not None and sent >= reply.die_after_chunks:
                    self._abort()
                    return
                event({"content": piece})
            if reply.die_after_chunks is not None:
                self._abort()
                return
            finish = reply.finish_reason
        else:
            if reply.content:
                for piece in _split_words(reply.content):
                    event({"content": piece})
            for delta in self._tool_call_deltas(reply, cid):
                event({"tool_calls": [delta]})
            finish = "tool_calls"
            if profile is not None and profile.finish_with_tool_calls != "tool_calls":
                finish = profile.finish_with_tool_calls
                self._count("finish_stop_with_tool_calls")
        included = (body.get("stream_options") or {}).get("include_usage") and not reply.omit_usage
        placement = "empty_choices" if profile is None else profile.usage
        usage = _usage(body, reply)
        if placement == "last_chunk" and not reply.omit_usage:
            event({}, finish, usage=usage)
            self._count("usage_in_last_chunk")
        elif placement == "in_choice" and not reply.omit_usage:
            chunk_choice = {"index": 0, "delta": {}, "finish_reason": finish, "usage": usage}
            self._write_chunk(
                b"data: "
                + json.dumps(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [chunk_choice],
                    }
                ).encode()
                + b"\n\n"
            )
            self._count("usage_in_choice")
        else:
            event({}, finish)
            if placement == "absent":
                self._count("usage_absent")
            elif included:
                event(None, usage=usage)
                self._count("usage_empty_choices_chunk")
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _tool_call_deltas(self, reply: ToolCallsReply, cid: str) -> Iterator[dict[str, Any]]:
        """The streamed deltas of the reply's tool calls, shaped as the profile sends them."""
        profile = self._profile
        placement = "sequential" if profile is None else profile.tool_index
        whole = profile is not None and profile.tool_arguments_whole
        if placement == "absent":
            self._count("tool_delta_without_index")
        elif placement == "zero" and len(reply.calls) > 1:
            self._count("tool_delta_index_reused")
        self._count("tool_arguments_whole" if whole else "tool_id_first_only")

        def indexed(delta: dict[str, Any], index: int) -> dict[str, Any]:
            if placement == "sequential":
                return {"index": index, **delta}
            if placement == "zero":
                return {"index": 0, **delta}
            return delta

        for index, spec in enumerate(reply.calls):
            call_id = _call_id(spec, cid, index)
            if whole:
                function = {"name": spec.name, "arguments": spec.arguments}
                yield indexed({"id": call_id, "type": "function", "function": function}, index)
                continue
            head = {"name": spec.name, "arguments": ""}
            yield indexed({"id": call_id, "type": "function", "function": head}, index)
            for piece in _split_chars(spec.arguments, 16):
                yield indexed({"function": {"arguments": piece}}, index)

    def _event_stream(self, reply: EventStreamReply, wake: threading.Event) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in reply.pieces:
            if isinstance(piece, bytes):
                self._write_chunk(piece)
            elif wake.wait(piece):
                self._abort()
                return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # plumbing

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        """Drop the connection mid-response, as a crashed or unplugged provider would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(
        self,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        retry: bool = True,
    ) -> None:
        extra = dict(headers or {})
        if not retry:
            extra["x-should-retry"] = "false"
        self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", extra)

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


ScriptedOpenAIServer.handler = _Handler


# --- OpenAI wire format ----------------------------------------------------------------------


def _error_body(message: str, code: str | None, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def _call_id(spec: ToolCallSpec, cid: str, index: int) -> str:
    return spec.id or f"call_{cid.rsplit('-', 1)[-1]}_{index}"


def _reasoning_key(profile: ProviderProfile | None) -> str:
    return "reasoning_content" if profile is None else profile.reasoning_field


def _completion(
    body: dict[str, Any],
    reply: TextReply | ToolCallsReply,
    cid: str,
    reasoning_key: str = "reasoning_content",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.reasoning_content is not None:
        message[reasoning_key] = reply.reasoning_content
    if isinstance(reply, ToolCallsReply):
        message["tool_calls"] = [
            {
                "id": _call_id(spec, cid, index),
                "type": "function",
                "function": {"name": spec.name, "arguments": spec.arguments},
            }
            for index, spec in enumerate(reply.calls)
        ]
        finish = "tool_calls"
    else:
        finish = reply.finish_reason
    completion = {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "system_fingerprint": None,
    }
    if not reply.omit_usage:
        completion["usage"] = _usage(body, reply)
    return completion


def _usage(body: dict[str, Any], reply: TextReply | ToolCallsReply) -> dict[str, int]:
    if reply.usage is not None:
        usage = dict(reply.usage)
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        return usage
    prompt = _estimate(json.dumps(body.get("messages", []), ensure_ascii=False))
    completion_text = reply.content or ""
    if isinstance(reply, ToolCallsReply):
        completion_text += "".join(spec.name + spec.arguments for spec in reply.calls)
    completion = _estimate(completion_text)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _estimate(text_: str) -> int:
    return max(1, len(text_) // 4)


def _split_words(text_: str, words: int = 3) -> Iterator[str]:
    tokens = re.findall(r"\s*\S+\s*", text_) or ([text_] if text_ else [])
    for start in range(0, len(tokens), words):
        yield "".join(tokens[start : start + words])


def _split_chars(text_: str, size: int) -> Iterator[str]:
    for start in range(0, len(text_), max(1, size)):
        yield text_[start : start + size]
