"""The model client's CPU per call and per streamed chunk, through the real ``openai`` SDK, at zero latency.

Two load-test model servers (:mod:`benchmarks.streaming_llm`, latency 0) run in child processes, one streaming
``--tokens`` content chunks per streamed answer and one streaming none; the client, in this process, makes
``--calls`` calls of each kind through :class:`~agents.engine.llm.OpenAICompatibleLLM` with a connect guard
(as the platform's, every request checked) and prints the client's CPU µs per call:

- ``tool call``: ``chat()`` with one tool, answered by a tool call (not streamed);
- ``stream N``: ``stream_chat()`` read to its end, N content chunks (plus role, finish, usage and ``[DONE]``);
- ``per chunk``: (``stream N`` - ``stream 0``) / N;
- ``decode per chunk``: ``stream_chat()`` reading N chunks handed over one a read without a transport (the
  response replaced by its bytes): the SSE and chunk decoding alone, per chunk.

    .venv/bin/python benchmarks/llm_call_cpu.py                       # this tree
    .venv/bin/python benchmarks/llm_call_cpu.py --ab /tmp/base --rounds 7   # A/B: /tmp/base vs this tree
    .venv/bin/python benchmarks/llm_call_cpu.py --profile stream      # cProfile of streamed calls

``--ab`` runs both trees in fresh child processes per round, alternating which goes first, against the same
servers, and prints medians over rounds with their spread (min-max).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("LLM_CPU_ROOT") or HERE)
sys.path.insert(0, str(ROOT))

TOOL = {
    "type": "function",
    "function": {
        "name": "erp__get_order",
        "description": "An order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


class _Allow:
    """A connect guard that allows loopback, at the cost of a call per connection or request."""

    async def check(self, host: str, port: int) -> Sequence[str]:
        return ["127.0.0.1"]

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Allow)


def _server(tokens: int, interval: float) -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "benchmarks" / "streaming_llm.py"),
            "--latency",
            "0,0",
            "--tokens",
            str(tokens),
            "--token-interval",
            str(interval),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    assert child.stdout is not None
    return child, int(json.loads(child.stdout.readline())["port"])


async def measure(ports: dict[str, int], calls: int) -> dict[str, float]:
    from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
    from agents.engine.transcript import WireView  # the history as a run holds it: each message encoded once

    def llm(port: int) -> Any:
        return OpenAICompatibleLLM(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-bench", model="bench", guard=_Allow()
        )

    messages = WireView(
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Where is order 42?"},
        ]
    )
    after_tool = WireView(
        [
            *messages,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "erp__get_order", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        ]
    )

    async def tool_call(model: Any) -> None:
        reply = await model.chat(messages, tools=[TOOL])
        assert reply.tool_calls, reply

    async def stream(model: Any) -> None:
        async for _ in model.stream_chat(after_tool):
            pass

    kinds = {
        "tool call": (tool_call, llm(ports["0"])),
        "stream 0": (stream, llm(ports["0"])),
        "stream N": (stream, llm(ports["N"])),
    }
    for call, model in kinds.values():
        for _ in range(20):
            await call(model)  # warm-up: the connection, caches
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    gc.collect()
    for _ in range(5):  # blocks, interleaved, so that a slow spell is shared
        for name, (call, model) in kinds.items():
            cpu = time.process_time()
            for _ in range(calls // 5):
                await call(model)
            samples[name].append((time.process_time() - cpu) / (calls // 5) * 1e6)
    await aclose_shared_clients()
    return {name: statistics.median(values) for name, values in samples.items()}


class _Body:
    """A streamed response already received: ``stream_chat`` reads it as it reads the transport's."""

    def __init__(self, events: list[bytes]) -> None:
        self.events = events
        self.request = None

    async def aiter_bytes(self) -> Any:
        for event in self.events:
            yield event

    async def aclose(self) -> None:
        return None


async def decode(tokens: int, calls: int) -> dict[str, float]:
    """CPU µs per chunk of ``stream_chat`` reading ``tokens`` content chunks, one event a read, without a
    transport (the response replaced by its bytes): the decoding alone, SSE to the yielded delta."""
    sys.path.append(str(HERE))  # after ROOT: the engine is ROOT's, the server's framing HERE's
    from agents.engine.llm import OpenAICompatibleLLM
    from benchmarks.streaming_llm import _chunk, _done_chunk, _sse

    def unchunked(framed: bytes) -> bytes:  # the HTTP chunk's payload, as aiohttp hands it over
        return framed.split(b"\r\n", 1)[1].rsplit(b"\r\n", 1)[0]

    events = [unchunked(_sse(_chunk("c", {"role": "assistant", "content": ""})))]
    events += [
        unchunked(_sse(_chunk("c", {"content": f"@{1764700000000000000 + i} "}))) for i in range(tokens)
    ]
    usage = _chunk("c", None)
    usage["usage"] = {"prompt_tokens": 300, "completion_tokens": tokens, "total_tokens": 330}
    events += [unchunked(_sse(_chunk("c", {}, "stop"))), unchunked(_sse(usage)), b"data: [DONE]\n\n"]
    del _done_chunk
    llm = OpenAICompatibleLLM(base_url="http://127.0.0.1:9/v1", api_key="sk", model="bench")

    async def post(*args: Any, **kwargs: Any) -> Any:
        return _Body(events)

    llm._post = post  # type: ignore[method-assign]
    messages = [{"role": "user", "content": "hi"}]

    async def one() -> int:
        return len([delta async for delta in llm.stream_chat(messages)])

    assert await one() == tokens
    samples = []
    for _ in range(7):
        cpu = time.process_time()
        for _ in range(calls):
            await one()
        samples.append((time.process_time() - cpu) / calls / tokens * 1e6)
    return {"decode per chunk": statistics.median(samples)}


def _run(ports: dict[str, int], calls: int, tokens: int) -> dict[str, float]:
    row = asyncio.run(measure(ports, calls))
    row["per chunk"] = (row["stream N"] - row["stream 0"]) / tokens
    row.update(asyncio.run(decode(tokens, calls)))
    return row


def _child(root: Path, ports: dict[str, int], calls: int, tokens: int) -> dict[str, float]:
    env = {**os.environ, "LLM_CPU_ROOT": str(root), "PYTHONPATH": str(root)}
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--once",
            "--ports",
            json.dumps(ports),
            "--calls",
            str(calls),
            "--tokens",
            str(tokens),
        ],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _profile(ports: dict[str, int], kind: str, calls: int) -> None:
    import cProfile
    import pstats

    from agents.engine.llm import OpenAICompatibleLLM
    from agents.engine.transcript import WireView

    port = ports["N"] if kind == "stream" else ports["0"]
    model = OpenAICompatibleLLM(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-bench", model="bench", guard=_Allow()
    )

    async def once() -> None:
        if kind == "stream":
            async for _ in model.stream_chat(WireView([{"role": "user", "content": "hi"}])):
                pass
        else:
            await model.chat(WireView([{"role": "user", "content": "hi"}]), tools=[TOOL])

    async def run() -> None:
        for _ in range(20):
            await once()
        profiler.enable()
        for _ in range(calls):
            await once()
        profiler.disable()

    profiler = cProfile.Profile()
    asyncio.run(run())
    if os.environ.get("LLM_CPU_PROFILE_OUT"):
        profiler.dump_stats(os.environ["LLM_CPU_PROFILE_OUT"])
    pstats.Stats(profiler).sort_stats("tottime").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="one round in this process, JSON on stdout")
    parser.add_argument("--ports", help="running servers' ports as JSON {'0': p, 'N': p}")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--tokens", type=int, default=80)
    parser.add_argument(
        "--interval",
        type=float,
        default=0.001,
        help="seconds between chunks (each then read on its own, as live)",
    )
    parser.add_argument("--ab", type=Path, help="the other tree (a git worktree of the base commit)")
    parser.add_argument("--b", type=Path, default=HERE, help="the tree measured against --ab")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", choices=("stream", "tool"))
    options = parser.parse_args()
    servers = []
    if options.ports:
        ports = json.loads(options.ports)
    else:
        (zero, zero_port), (full, full_port) = (
            _server(0, options.interval),
            _server(options.tokens, options.interval),
        )
        servers = [zero, full]
        ports = {"0": zero_port, "N": full_port}
    try:
        if options.once:
            print(json.dumps(_run(ports, options.calls, options.tokens)))
        elif options.profile:
            _profile(ports, options.profile, options.calls)
        elif options.ab:
            trees = {"A (base)": options.ab, "B (new)": options.b}
            results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
            for r in range(options.rounds):
                for name in list(trees) if r % 2 == 0 else list(reversed(trees)):
                    results[name].append(_child(trees[name], ports, options.calls, options.tokens))
                    print(f"round {r + 1}/{options.rounds} {name} done", file=sys.stderr, flush=True)
            print(
                f"client CPU µs, medians over {options.rounds} interleaved rounds (min-max), {options.tokens} chunks"
            )
            for kind in ("tool call", "stream 0", "stream N", "per chunk", "decode per chunk"):
                cells = []
                for name in trees:
                    values = [row[kind] for row in results[name]]
                    cells.append(
                        f"{name} {statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})"
                    )
                a = statistics.median(row[kind] for row in results["A (base)"])
                b = statistics.median(row[kind] for row in results["B (new)"])
                print(f"{kind:<10}  " + "   ".join(cells) + f"   B/A {b / a:.2f}")
        else:
            for name, value in _run(ports, options.calls, options.tokens).items():
                print(f"{name:<10} {value:8.1f} µs")
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
