"""A whole model turn through the real ``openai`` SDK, ``chat()`` included, at zero latency.

A scripted model calls one tool per turn K times (K = 1, 10, 50, 200), then answers; the run's wall time and
the client process's CPU time are divided by its turns. The scripted OpenAI-compatible server
(``tests/fakes/openai_server.py``) runs in a child process, so neither its CPU time nor its hold on the GIL is
counted: what is measured is the engine plus the SDK plus the transport, on the client's side of the socket.
"last 10" is the median wall time of the run's last ten turns (one ``chat()`` start to the next): equal to
the mean at every K means a turn costs the same however long the history is.

    .venv/bin/python benchmarks/sdk_turn.py                        # this tree, one round
    .venv/bin/python benchmarks/sdk_turn.py --ks 1,3 --runs 2      # tiny (make bench-smoke)
    .venv/bin/python benchmarks/sdk_turn.py --ab /tmp/base --rounds 5   # A/B: /tmp/base vs this tree
    .venv/bin/python benchmarks/sdk_turn.py --ab /tmp/base --b /tmp/new   # A/B of two worktrees
    .venv/bin/python benchmarks/sdk_turn.py --transports             # the SDK's aiohttp vs httpx transports
    .venv/bin/python benchmarks/sdk_turn.py --profile 50          # cProfile of runs at K = 50

``--ab`` runs the same measurement in two child processes per round, alternating which tree goes first
(each tree's code imported from its own directory, the server shared), and prints medians over rounds with
their spread (min-max).
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
# The tree whose engine is measured (``--ab`` points a child at another tree); the server is always HERE's.
ROOT = Path(os.environ.get("SDK_TURN_ROOT") or HERE)
sys.path.insert(0, str(ROOT))

KS = (1, 10, 50, 200)
RUNS = {1: 150, 10: 30, 50: 8, 200: 3}
QUERY = "Find what we know about the query (K={k})."


# --- the server, in its own process -----------------------------------------------------------


def _reply(body: dict[str, Any]) -> Any:
    """A tool call while the run has made fewer than K (read from the query), then the answer."""
    from tests.fakes.openai_server import call, text, tool_calls

    messages = body["messages"]
    user = next(m["content"] for m in messages if m.get("role") == "user")
    k = int(user.rsplit("K=", 1)[1].rstrip(")."))
    done = sum(1 for m in messages if m.get("role") == "tool")
    if done < k:
        return tool_calls(call("search", {"q": f"query {done}"}))
    return text("Here is the answer.")


def serve() -> None:
    """Run the scripted server until stdin closes; print its base URL first."""
    sys.path.insert(0, str(HERE))
    from tests.fakes.openai_server import ScriptedOpenAIServer

    class Forget(list[Any]):
        """What the server records of each request, forgotten (runs of K = 200 would hold every body)."""

        def append(self, item: Any) -> None:
            pass

    with ScriptedOpenAIServer() as server:
        server.requests, server.headers, server.peers = Forget(), Forget(), Forget()
        server.script(*([_reply] * 1_000_000))
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes it


# --- the client ---------------------------------------------------------------------------------


async def _search(q: str) -> str:
    return f"3 results for {q}"


class TimedLLM:
    """Wraps an LLM and records when each ``chat()`` call starts."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.abilities = llm.abilities
        self.context_window = llm.context_window
        self.starts: list[float] = []

    async def chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
        self.starts.append(time.perf_counter())
        return await self.llm.chat(messages, **kwargs)

    def stream_chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
        return self.llm.stream_chat(messages, **kwargs)


async def measure(base_url: str, ks: Sequence[int], runs: dict[int, int]) -> dict[str, dict[str, float]]:
    from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
    from agents.engine.react import ReActAgent
    from agents.engine.tools import FunctionTool, ToolRegistry

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = ToolRegistry([FunctionTool("search", "Search the knowledge base.", _search, parameters=schema)])
    client = None
    if (
        os.environ.get("SDK_TURN_TRANSPORT") == "httpx"
    ):  # the SDK's default transport, else the engine's aiohttp
        import openai

        from agents.engine.llm_client import _BoundedRetriesClient

        client = _BoundedRetriesClient(
            base_url=base_url, api_key="sk-bench", max_retries=0, http_client=openai.DefaultAsyncHttpxClient()
        )
    inner = OpenAICompatibleLLM(
        base_url=base_url, api_key="sk-bench", model="bench", max_retries=0, client=client
    )
    llm = TimedLLM(inner)

    async def on_event(event: Any) -> None:
        pass

    async def one(k: int) -> tuple[float, float, float, int]:
        llm.starts.clear()
        agent = ReActAgent(llm, tools, max_iterations=k + 10)
        cpu, wall = time.process_time(), time.perf_counter()
        result = await agent.run(QUERY.format(k=k), on_event=on_event)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        turns = len(llm.starts)  # model calls (guidance may add a turn to the K + 1)
        assert turns >= k + 1 and result.stop_reason == "final_answer", (
            f"K={k}: {turns} ({result.stop_reason})"
        )
        gaps = [b - a for a, b in zip(llm.starts, llm.starts[1:], strict=False)]
        last = statistics.median(gaps[-10:]) if len(gaps) >= 10 else float("nan")
        return wall / turns, cpu / turns, last, turns

    out: dict[str, dict[str, float]] = {}
    for k in ks:
        await one(k)  # warm-up (connection pool, caches)
        served = _server_cpu()
        rows = [await one(k) for _ in range(runs[k])]
        served = _server_cpu() - served
        out[str(k)] = {
            "wall_ms": statistics.median(r[0] for r in rows) * 1e3,
            "cpu_ms": statistics.median(r[1] for r in rows) * 1e3,
            "last10_ms": statistics.median(r[2] for r in rows) * 1e3,
            "server_cpu_ms": served / sum(r[3] for r in rows) * 1e3,
        }
    await aclose_shared_clients()
    if client is not None:
        await client.close()
    return out


def _server_cpu() -> float:
    """The scripted server process's CPU seconds so far (0 when its process id is not known)."""
    pid = os.environ.get("SDK_TURN_SERVER_PID")
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def profile(base_url: str, k: int, runs: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()

    async def profiled() -> None:
        await measure(base_url, (k,), {k: 1})  # imports and first-call costs, not profiled
        profiler.enable()
        await measure(base_url, (k,), {k: runs})
        profiler.disable()

    asyncio.run(profiled())
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    stats.print_stats(45)
    stats.sort_stats("tottime").print_stats(30)


# --- A/B ----------------------------------------------------------------------------------------


def _child(root: Path, base_url: str, ks: Sequence[int], transport: str) -> dict[str, dict[str, float]]:
    env = {**os.environ, "SDK_TURN_ROOT": str(root), "PYTHONPATH": str(root), "SDK_TURN_TRANSPORT": transport}
    done = subprocess.run(
        [sys.executable, __file__, "--once", "--url", base_url, "--ks", ",".join(map(str, ks))],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.3f} ({min(values):.3f}-{max(values):.3f})"


def ab(trees: dict[str, tuple[Path, str]], rounds: int, base_url: str, ks: Sequence[int]) -> None:
    """Each of ``trees`` (name: its directory and transport) in turn, ``rounds`` times, alternating the order."""
    results: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for r in range(rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for name in order:
            root, transport = trees[name]
            results[name].append(_child(root, base_url, ks, transport))
            print(f"round {r + 1}/{rounds} {name} done", file=sys.stderr, flush=True)
    print(f"medians over {rounds} interleaved rounds (min-max); ms per turn, chat() included")
    print("server CPU: the scripted server's, per turn (not in the client's CPU; in the wall time)")
    print(
        f"{'tree':<15}{'K':>5}  {'wall':>22}  {'client CPU':>22}  {'last 10 (wall)':>22}  {'server CPU':>22}"
    )
    for name, rows in results.items():
        for k in map(str, ks):
            wall = [row[k]["wall_ms"] for row in rows]
            cpu = [row[k]["cpu_ms"] for row in rows]
            last = [row[k]["last10_ms"] for row in rows if row[k]["last10_ms"] == row[k]["last10_ms"]]
            served = [row[k]["server_cpu_ms"] for row in rows]
            print(
                f"{name:<15}{k:>5}  {_spread(wall):>22}  {_spread(cpu):>22}  "
                f"{_spread(last) if last else '-':>22}  {_spread(served):>22}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--once", action="store_true", help="one round in this process, JSON on stdout")
    parser.add_argument("--url", help="a running scripted server's base URL")
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--ab", type=Path, help="the other tree (a git worktree of the base commit)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--b", type=Path, default=HERE, help="the tree measured against --ab (default: this one)"
    )
    parser.add_argument(
        "--transports", action="store_true", help="A/B of the SDK's transports (aiohttp, httpx) on --b's tree"
    )
    parser.add_argument("--profile", type=int, metavar="K", help="cProfile runs at this K")
    parser.add_argument("--runs", type=int, help="runs per K (one round, or with --once)")
    options = parser.parse_args()
    if options.serve:
        serve()
        return
    ks = [int(k) for k in options.ks.split(",")]
    runs = RUNS if options.runs is None else dict.fromkeys(ks, options.runs)
    server = None
    url = options.url
    if url is None:
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        os.environ["SDK_TURN_SERVER_PID"] = str(server.pid)
    try:
        gc.collect()
        if options.profile:
            profile(url, options.profile, RUNS.get(options.profile, 5) * 2)
        elif options.transports:
            trees = {"aiohttp": (options.b, "aiohttp"), "httpx (default)": (options.b, "httpx")}
            ab(trees, options.rounds, url, ks)
        elif options.ab:
            ab(
                {"A (base)": (options.ab, "aiohttp"), "B (new)": (options.b, "aiohttp")},
                options.rounds,
                url,
                ks,
            )
        elif options.once:
            print(json.dumps(asyncio.run(measure(url, ks, runs))))
        else:
            for k, row in asyncio.run(measure(url, ks, runs)).items():
                print(f"K={k:>4}  " + "  ".join(f"{name} {value:.3f}" for name, value in row.items()))
    finally:
        if server is not None:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
