"""Where the memory of idle websockets goes: one daphne (tracemalloc on), N idle authenticated sockets.

    BENCH_REDIS_URL=... BENCH_DATABASE_NAME=... python benchmarks/ws_mem.py --n 500 --out DIR

Snapshots before and after opening the sockets (``benchmarks.ws_mem_wiring``); prints RSS per socket and
the top tracebacks of the difference, in bytes per socket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import BenchStack, free_port, process_rss_kib, world_args  # noqa: E402
from benchmarks.ws_load import Level, open_socket, start_model, until_done  # noqa: E402


def snap(pid: int, out: Path, k: int) -> Path:
    os.kill(pid, signal.SIGUSR1)
    done = out / f"snap-{k}.done"
    for _ in range(600):
        if done.exists():
            return out / f"snap-{k}.pickle"
        time.sleep(0.1)
    raise RuntimeError("no snapshot")


async def open_retrying(base: str, conversation: str, token: str):  # type: ignore[no-untyped-def]
    for attempt in range(5):  # tracemalloc slows daphne: a handshake may time out (5 s)
        try:
            return await open_socket(base, conversation, token)
        except Exception:
            if attempt == 4:
                raise
            await asyncio.sleep(0.5)


async def run(args: argparse.Namespace) -> None:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("snap-*"):
        old.unlink()
    ns = argparse.Namespace(latency="0.0,0.0", tokens=3, token_interval=0.0)
    model, model_url = start_model(ns)
    try:
        with BenchStack(extra_env={"AGENT_MAX_CONCURRENT_RUNS_PER_USER": "100000"}) as stack:
            world = stack.world(
                "benchmarks.world", *world_args(f"{model_url}/v1", f"{model_url}/erp", args.n + 1)
            )
            env = {"WS_MEM_DIR": str(out), "WS_MEM_FRAMES": str(args.frames)}
            app = None if args.plain else "benchmarks.ws_mem_wiring:application"
            daphne = stack.start_daphne(free_port(), env=env, application=app)
            base, pid, token = str(daphne.spec.base_url), daphne.pid, world["token"]
            level = Level(n=args.n)
            warm = await open_retrying(base, world["conversations"][-1], token)
            await warm.send(json.dumps({"type": "message", "content": "Where is order 1?"}))
            await until_done(warm, level, "w", record=False)
            await warm.close()
            await asyncio.sleep(1.0)
            if not args.plain:
                before = snap(pid, out, 1)
            rss0 = process_rss_kib(pid)
            gate = asyncio.Semaphore(10)

            async def opened(c: str):  # type: ignore[no-untyped-def]
                async with gate:
                    return await open_retrying(base, c, token)

            sockets = await asyncio.gather(*(opened(c) for c in world["conversations"][: args.n]))
            await asyncio.sleep(1.0)
            rss1 = process_rss_kib(pid)
            print(f"RSS per idle socket: {(rss1 - rss0) / args.n:.1f} KiB (N={args.n})")
            if not args.plain:
                after = snap(pid, out, 2)
                report(before, after, args.n, args.top)
            await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    finally:
        model.kill()


def report(before: Path, after: Path, n: int, top: int) -> None:
    a = tracemalloc.Snapshot.load(str(before))
    b = tracemalloc.Snapshot.load(str(after))
    stats = b.compare_to(a, "traceback")
    total = sum(s.size_diff for s in stats)
    print(f"tracemalloc: {total / n / 1024:.2f} KiB per socket traced (Python heap)")
    for s in stats[:top]:
        if s.size_diff <= 0:
            continue
        print(f"\n{s.size_diff / n:8.0f} B/sock  {s.count_diff / n:6.1f} blocks/sock")
        for line in s.traceback.format()[::-1][:20]:
            if line.startswith("  File"):
                print(
                    "   ",
                    line.strip()
                    .replace(str(ROOT) + "/", "")
                    .replace("/work/main/.venv/lib/python3.12/site-packages/", ""),
                )
    by_file = b.compare_to(a, "filename")
    print("\n-- by file --")
    for s in by_file[:25]:
        print(
            f"{s.size_diff / n:8.0f} B/sock  {s.traceback[0].filename.replace('/work/main/.venv/lib/python3.12/site-packages/', '')}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("/tmp/ws_mem"))
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--plain", action="store_true", help="no tracemalloc: RSS only")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
