"""A load-test model and ERP in one asyncio process: an OpenAI-compatible endpoint with realistic latency
and token streaming, and the little ERP its tool calls reach.

    python -m benchmarks.streaming_llm --port 0 [--latency 0.2,0.8] [--tokens 30] [--token-interval 0.03]

It prints ``{"port": N}`` once it listens. Every model call waits a latency drawn uniformly from
``--latency`` seconds (seeded, so runs are comparable), then answers by the shape of the request:

- no tool result yet: a tool call, ``erp__get_order`` (or ``erp__slow_report`` when the question says
  "slow"), not streamed;
- after a tool result: a short draft answer, not streamed;
- a streamed request (the answer synthesis): ``--tokens`` chunks ``--token-interval`` seconds apart.
  Each chunk's text is ``@<wall-clock ns at the moment it is written> ``, so a client that receives the
  ``answer`` delta carrying it knows how long the event took from the model's socket to its own.

ERP: ``GET /erp/orders/<id>`` answers after 20 ms; ``GET /erp/slow`` after 60 s (a tool in flight).

Also an OTLP/HTTP trace sink: ``POST /v1/traces`` (point ``OTEL_EXPORTER_OTLP_ENDPOINT`` at this server)
answers 200 and counts the spans of each export request. ``GET /stats`` answers
``{"calls", "trace_exports", "spans"}``: model calls and spans received so far.
One asyncio loop, HTTP/1.1 keep-alive, no threads: hundreds of concurrent streams stay cheap.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import time
from typing import Any

SLOW_TOOL_SECONDS = 60.0
ORDER_LATENCY = 0.02


class ModelBehaviour:
    """What the model answers and how slowly."""

    def __init__(
        self, *, latency: tuple[float, float], tokens: int, token_interval: float, seed: int
    ) -> None:
        self.latency = latency
        self.tokens = tokens
        self.token_interval = token_interval
        self.random = random.Random(seed)
        self.calls = 0
        self.trace_exports = 0
        self.spans = 0

    def delay(self) -> float:
        return self.random.uniform(*self.latency)


def _sse(payload: dict[str, Any]) -> bytes:
    data = b"data: " + json.dumps(payload).encode() + b"\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _chunk(cid: str, delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "bench",
        "choices": choices,
    }


def _completion(cid: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "bench",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
    }


def _reply_message(body: dict[str, Any], number: int) -> tuple[dict[str, Any], str]:
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": "The order is shipped."}, "stop"
    question = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    if "slow" in question.lower():
        call = {"name": "erp__slow_report", "arguments": "{}"}
    else:
        call = {"name": "erp__get_order", "arguments": json.dumps({"order_id": str(number % 1000)})}
    tool_call = {"id": f"call_{number}", "type": "function", "function": call}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls"


class Server:
    """The HTTP side: parses requests on keep-alive connections and routes them."""

    def __init__(self, behaviour: ModelBehaviour) -> None:
        self.behaviour = behaviour

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)
                }
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                await self.route(method, path, body, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def route(self, method: str, path: str, raw: bytes, writer: asyncio.StreamWriter) -> None:
        if path.startswith("/v1/chat/completions"):
            await self.chat(json.loads(raw), writer)
        elif path.startswith("/erp/orders/"):
            await asyncio.sleep(ORDER_LATENCY)
            await self.send_json(writer, 200, {"id": path.rsplit("/", 1)[-1], "status": "shipped"})
        elif path.startswith("/v1/traces"):
            self.behaviour.trace_exports += 1
            self.behaviour.spans += _span_count(raw)
            await self.send_json(writer, 200, {})
        elif path.startswith("/stats"):
            behaviour = self.behaviour
            stats = {
                "calls": behaviour.calls,
                "trace_exports": behaviour.trace_exports,
                "spans": behaviour.spans,
            }
            await self.send_json(writer, 200, stats)
        elif path.startswith("/erp/slow"):
            await asyncio.sleep(SLOW_TOOL_SECONDS)
            await self.send_json(writer, 200, {"report": "done"})
        else:
            await self.send_json(writer, 404, {"error": "not found"})

    async def chat(self, body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        self.behaviour.calls += 1
        number = self.behaviour.calls
        cid = f"chatcmpl-bench-{number}"
        await asyncio.sleep(self.behaviour.delay())
        if not body.get("stream"):
            message, finish = _reply_message(body, number)
            await self.send_json(writer, 200, _completion(cid, message, finish))
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(_sse(_chunk(cid, {"role": "assistant", "content": ""})))
        await writer.drain()
        for index in range(self.behaviour.tokens):
            if index:
                await asyncio.sleep(self.behaviour.token_interval)
            writer.write(_sse(_chunk(cid, {"content": f"@{time.time_ns()} "})))
            await writer.drain()
        writer.write(_sse(_chunk(cid, {}, "stop")))
        usage = _chunk(cid, None)
        usage["usage"] = {
            "prompt_tokens": 300,
            "completion_tokens": self.behaviour.tokens,
            "total_tokens": 330,
        }
        writer.write(_sse(usage))
        writer.write(_done_chunk())
        await writer.drain()

    @staticmethod
    async def send_json(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        reason = "OK" if status == 200 else "Not Found"
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()


def _span_count(body: bytes) -> int:
    """Spans in one OTLP/HTTP protobuf export request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(body)
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def _done_chunk() -> bytes:
    data = b"data: [DONE]\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n"


async def serve(port: int, behaviour: ModelBehaviour) -> None:
    server = Server(behaviour)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    print(json.dumps({"port": listener.sockets[0].getsockname()[1]}), flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", default="0.2,0.8", help="min,max seconds before each reply")
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--token-interval", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()
    low, high = (float(x) for x in args.latency.split(","))
    behaviour = ModelBehaviour(
        latency=(low, high), tokens=args.tokens, token_interval=args.token_interval, seed=args.seed
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, behaviour))


if __name__ == "__main__":
    main()
