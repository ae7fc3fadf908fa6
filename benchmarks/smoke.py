"""Every benchmark at a tiny size, one after another (``make bench-smoke``, run by CI).

    .venv/bin/python -m benchmarks.smoke [--only approval_storm.py,chaos.py] [--list]

Not a measurement (the figures of a tiny run mean nothing): it proves each script still runs with its
defaults, no hidden setting, and that the proofs some of them make still hold: exactly one decision per
approval under concurrent attempts (``approval_storm.py``), no event lost or repeated through reconnects
and kills (``chaos.py``), every run and cancel of a websocket load completed (``ws_load.py``). A smoke
passes when its script exits 0 and prints its ``expect`` line; the exit status is non-zero if any fails.

The multi-process ones need PostgreSQL and Redis (``BENCH_POSTGRES_URL``, ``BENCH_REDIS_URL``, as the
benchmarks themselves; ``BENCH_DATABASE_NAME`` and ``BENCH_LOG_DIR`` keep concurrent runs apart). Every
file of ``benchmarks/`` is either smoked here or a helper listed in :data:`HELPERS` with the smoked
script that runs it; a test (``tests/benchmarks/test_smoke.py``) keeps it so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Smoke:
    """One tiny run of a benchmark script: its arguments (``{tmp}`` is a scratch directory) and the
    line its output must contain."""

    script: str
    args: tuple[str, ...]
    expect: str
    timeout: float = 120.0


# A tiny profile in py-spy's raw format: 4 samples, 2 in usage accounting, 1 in the tracing exporter.
PYSPY_SAMPLE = """\
MainThread;run (agents/engine/react.py:10);record (agents/usage/meter.py:5) 2
MainThread;run (agents/engine/react.py:10) 1
Thread-2;export (trace/__init__.py:3);BatchSpanProcessor.export (export/__init__.py:1) 1
"""

SMOKES: tuple[Smoke, ...] = (
    Smoke("engine_overhead.py", ("--smoke",), "scripted HTTP server"),
    Smoke("engine_overhead.py", ("--smoke", "--growth"), "platform + JSON writer"),
    Smoke("engine_overhead.py", ("--smoke", "--tracing"), "tracing on (in memory)"),
    Smoke("engine_overhead.py", ("--smoke", "--accounting"), "accounting on"),
    Smoke("sdk_turn.py", ("--ks", "1,3", "--runs", "2"), "K=   3"),
    Smoke("llm_call_cpu.py", ("--calls", "5", "--tokens", "5"), "decode per chunk"),
    Smoke("event_relay_cpu.py", ("--iterations", "200", "--rounds", "1"), "µs CPU per event"),
    Smoke("param_binding.py", ("--repeat", "5"), "server %b"),
    Smoke(
        "knowledge_parsing.py",
        ("--pages", "3", "--memory-pages", "5", "--rounds", "1"),
        "peak memory reading",
    ),
    Smoke(
        "knowledge_vectors.py",
        ("--sizes", "200,1000", "--dimension", "64", "--queries", "5"),
        "OK: vector search found the nearest passages on pgvector, sqlite",
        timeout=300,
    ),
    # The fake embeddings of the test suite (the real model is not a project dependency); Chinese only
    # where manpages-zh is installed.
    Smoke(
        "knowledge_quality.py",
        ("--model", "fake", "--documents", "6", "--questions", "3"),
        "OK: ",
        timeout=240,
    ),
    Smoke(
        "knowledge_search_speed.py",
        ("--sizes", "300", "--queries", "5", "--languages", "en"),
        "OK: knowledge_search timed on pgvector, sqlite",
        timeout=300,
    ),
    # A person's memories recalled for a question (issue 36), 100 of them, 5 questions, on SQLite (the
    # PostgreSQL path is the same ORM query; the knowledge smokes above already start that server).
    Smoke(
        "memory_recall.py",
        ("--sizes", "100", "--queries", "5", "--backends", "sqlite"),
        "OK: memory_recall timed on sqlite",
        timeout=240,
    ),
    # A 2-page PDF and a 50 KB spreadsheet, uploaded and asked about once each, in a worker of their own.
    Smoke(
        "attachments_first_answer.py",
        ("--smoke",),
        "OK: both files uploaded, read and answered in 1 round(s) each",
        timeout=240,
    ),
    Smoke("pyspy_share.py", ("{tmp}/pyspy.txt",), "4 samples; accounting 50.00 % ± 50.00; tracing 25.00 %"),
    # One level without usage accounting (ws_load_wiring.py) and one as production runs it.
    Smoke(
        "ws_load.py",
        ("--levels", "2", "--rounds", "1", "--ramp", "0.5", "--think", "0.1,0.2", "--latency", "0.05,0.1")
        + ("--tokens", "5", "--token-interval", "0.01", "--level-timeout", "90")
        + ("--ab", "accounting", "--ab-rounds", "1"),
        "OK: every run of 2 level(s) ended with done",
        timeout=300,
    ),
    Smoke("ws_mem.py", ("--n", "5", "--top", "3", "--out", "{tmp}/ws_mem"), "tracemalloc:", timeout=240),
    Smoke(
        "approval_storm.py",
        ("--requests", "2", "--duplicates", "2", "--clicks", "1", "--web", "1"),
        "OK: every one of 2 requests: exactly one decision, one resume, one tool call",
        timeout=300,
    ),
    Smoke(
        "chaos.py",
        ("--conversations", "6", "--reconnects", "60", "--interrupt-within", "120"),
        "OK: no event lost or duplicated for any client",
        timeout=300,
    ),
)

# Files of benchmarks/ that are not run on their own: what they are, and a smoked script that runs them.
HELPERS: dict[str, tuple[str, str]] = {
    "smoke.py": ("this runner", "smoke.py"),
    "common.py": ("the scratch deployment and statistics", "ws_load.py"),
    "world.py": ("ws_load.py's organisation", "ws_load.py"),
    "chaos_world.py": ("chaos.py's organisation", "chaos.py"),
    "chaos_check.py": ("chaos.py's checks", "chaos.py"),
    "streaming_llm.py": ("the load-test model", "ws_load.py"),
    "ws_load_wiring.py": ("ws_load.py --ab accounting's application", "ws_load.py"),
    "embedding_server.py": ("knowledge_quality.py's embedding endpoint", "knowledge_quality.py"),
    "ws_mem_wiring.py": ("ws_mem.py's application with tracemalloc", "ws_mem.py"),
}


@dataclass(frozen=True)
class Result:
    smoke: Smoke
    ok: bool
    seconds: float
    why: str = ""


def run_one(smoke: Smoke, tmp: Path) -> Result:
    args = [arg.replace("{tmp}", str(tmp)) for arg in smoke.args]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / smoke.script), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=smoke.timeout,
        )
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        return Result(smoke, False, time.monotonic() - started, f"timed out\n{(output or '')[-3000:]}")
    seconds = time.monotonic() - started
    if done.returncode != 0:
        why = f"exit status {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return Result(smoke, False, seconds, why)
    if smoke.expect not in done.stdout:
        return Result(smoke, False, seconds, f"no line {smoke.expect!r} in:\n{done.stdout[-3000:]}")
    return Result(smoke, True, seconds)


def label(smoke: Smoke) -> str:
    return " ".join((smoke.script, *smoke.args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument("--list", action="store_true", help="print the commands and exit")
    options = parser.parse_args()
    chosen = [s for s in SMOKES if not options.only or s.script in options.only.split(",")]
    if options.list:
        for smoke in chosen:
            print(label(smoke))
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-smoke-") as scratch:
        tmp = Path(scratch)
        (tmp / "pyspy.txt").write_text(PYSPY_SAMPLE)
        for smoke in chosen:
            result = run_one(smoke, tmp)
            results.append(result)
            status = "ok    " if result.ok else "FAILED"
            print(f"{status} {result.seconds:6.1f} s  {label(smoke)}", flush=True)
            if not result.ok:
                print("    " + result.why.replace("\n", "\n    "), flush=True)
    failed = [r for r in results if not r.ok]
    total = sum(r.seconds for r in results)
    print(f"{len(results) - len(failed)} of {len(results)} benchmark smokes passed in {total:.0f} s")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
