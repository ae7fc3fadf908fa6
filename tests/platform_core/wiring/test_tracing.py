"""Traces for operators: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, a run's spans (the run, its model calls,
tool calls and hook verdicts) reach an OTLP/HTTP collector with who and what, and never the prompt; unset,
nothing is installed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from channels.db import database_sync_to_async
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agents import runtime
from agents.engine import tracing
from agents.runs.manager import run_manager
from platform_core.wiring.tracing_setup import tracing_setup, tracing_shutdown
from tests.agents.usage.helpers import ReActModel, ask, build_org, conversation_for, done_of, order_tools
from tests.fakes.threaded_server import ThreadedServer

QUESTION = "Where is order 7? My card is 4111-1111"
ANSWER = "Order 7 has shipped."


class _CollectorHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.owner.receive(self.path, self.headers.get("Content-Type", ""), body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


class OtlpCollector(ThreadedServer):
    """A loopback OTLP/HTTP trace receiver: decodes each export request (protobuf) into plain spans."""

    handler = _CollectorHandler

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.raw = b""
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def receive(self, path: str, content_type: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self.paths.append(path)
            self.raw += body
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            {
                                "name": span.name,
                                "id": span.span_id,
                                "parent": span.parent_span_id,
                                "trace": span.trace_id,
                                "attributes": {a.key: _value(a.value) for a in span.attributes},
                            }
                        )

    def named(self, name: str) -> list[dict[str, Any]]:
        return [s for s in self.spans if s["name"] == name]


def _value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None


@pytest.fixture
def collector() -> Iterator[OtlpCollector]:
    with OtlpCollector() as server:
        yield server


@pytest.fixture
def traced(collector: OtlpCollector, monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpCollector]:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.address)
    monkeypatch.delenv("OTEL_TRACE_CONTENT", raising=False)
    assert tracing_setup() is True
    try:
        yield collector
    finally:
        tracing_shutdown()


def test_without_the_endpoint_nothing_is_installed_and_runs_are_not_wrapped(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)

    assert tracing_setup() is False
    assert tracing.enabled() is False
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    with tracing.run_span({"run": "r"}) as span:
        assert span.span is None


@pytest.mark.django_db(transaction=True)
async def test_a_runs_spans_reach_the_collector_with_their_attributes_and_no_prompt(
    traced, scripted_llm, monkeypatch
):
    # given an organisation whose agent calls one tool, with tracing on
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=1, answer=ANSWER).install(scripted_llm)

    def given():
        org, user, agent, _ = build_org(scripted_llm.base_url)
        return org, user, agent, conversation_for(org, user, agent)

    org, user, agent, conversation = await database_sync_to_async(given)()

    # when the user asks and the run ends
    frames = await ask(user, conversation, QUESTION)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)
    tracing_shutdown()  # exports what is buffered
    run_id = frames[0]["run_id"]
    assert done_of(frames)["answer"] == ANSWER

    # then the run, its model calls, its tool call and its hook verdict are spans of one trace
    (run,) = traced.named("agent.run")
    assert run["attributes"]["run"] == run_id
    assert run["attributes"]["org"] == org.slug
    assert run["attributes"]["agent"] == str(agent.pk)
    assert run["attributes"]["outcome"]
    calls = traced.named("model.call")
    assert len(calls) >= 2
    assert all(c["trace"] == run["trace"] and c["attributes"]["run"] == run_id for c in calls)
    assert sum(c["attributes"]["tokens.total"] for c in calls) >= 2 * 1200
    assert {c["attributes"]["outcome"] for c in calls} >= {"tool_calls", "ok"}
    (tool,) = traced.named("tool.call")
    assert tool["attributes"]["tool"] == "lookup_order"
    assert tool["attributes"]["outcome"] == "ok"
    assert tool["parent"] == run["id"]
    (verdict,) = traced.named("hook.verdict")
    assert (verdict["attributes"]["tool"], verdict["attributes"]["verdict"]) == ("lookup_order", "allow")
    assert traced.paths and all(p == "/v1/traces" for p in traced.paths)
    # and neither the question, the answer nor the tool's result was exported
    for secret in (QUESTION, "4111-1111", ANSWER, "shipped"):
        assert secret.encode() not in traced.raw


@pytest.mark.django_db(transaction=True)
async def test_the_debug_setting_puts_the_prompt_on_model_call_spans(collector, scripted_llm, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.address)
    monkeypatch.setenv("OTEL_TRACE_CONTENT", "true")
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=0, answer=ANSWER).install(scripted_llm)
    assert tracing_setup() is True
    try:

        def given():
            org, user, agent, _ = build_org(scripted_llm.base_url)
            return user, conversation_for(org, user, agent)

        user, conversation = await database_sync_to_async(given)()
        await ask(user, conversation, QUESTION)
        for run_id in list(run_manager.runs):
            await run_manager.wait(run_id)
    finally:
        tracing_shutdown()

    prompts = [c["attributes"].get("prompt", "") for c in collector.named("model.call")]
    assert any(QUESTION in p for p in prompts)
