"""Chaos: random client reconnects, ``kill -9`` of a daphne process and of a Celery worker, mid-run.

    .venv/bin/python benchmarks/chaos.py [--conversations 24] [--reconnects 1000] [--seed 7]

A scratch deployment (``benchmarks/common.py``): daphne A and B, a Celery worker, Celery beat (the sweeper
every 2 s; leases of 3 s; approvals held 0.5 s in process, then parked), the model
(``tests/fakes/openai_server.py``, 0.3–2 s per call) and a loopback ERP in this process. Half the
conversations list payments (a read), half pay 60,000 CNY, which needs the approver: those runs park, the
benchmark approves each 1–3 s later through a random server, and the worker resumes them.

Meanwhile every client disconnects and reconnects to a random live server again and again (``resume``
after the last seq it holds) until ``--reconnects`` reconnects were made in all. Daphne A is killed with
SIGKILL 2 s into the load (and restarted 3 s later); the worker (its whole process tree) is killed while
it runs a resumed run (and a new worker started). A client that receives ``run_interrupted`` sends
``resume_run``.

Checked at the end, and the exit status is non-zero otherwise: both kills happened; every client received
every event of its conversation exactly once and in order (the same frames the database replays); every
run ended with one ``done``; every run that lost its process was interrupted (within 30 s,
``--interrupt-within``) and resumed; the ERP received exactly one request per conversation (no connector
call repeated). Tiny, for ``make bench-smoke``: ``--conversations 6 --reconnects 60 --interrupt-within
120`` (a loaded machine starts the replacement worker and beat slowly; the smoke proves that nothing is
lost, not how fast).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402
from websockets.exceptions import ConnectionClosed, WebSocketException  # noqa: E402

from benchmarks.chaos_check import verify  # noqa: E402
from benchmarks.common import LOG_DIR, BenchStack, free_port, machine_summary, world_args  # noqa: E402
from platform_core.wiring.deploy.services import postgres_query  # noqa: E402
from platform_core.wiring.deploy.stack import RunningProcess, beat_spec  # noqa: E402
from tests.fakes.http_service import running_http_service  # noqa: E402
from tests.fakes.openai_server import ScriptedOpenAIServer, call, text, tool_calls  # noqa: E402

ENV = {
    "RUN_LEASE_SECONDS": "3",
    "RUN_LEASE_RENEW_SECONDS": "1",
    "RUN_SWEEP_SECONDS": "2",
    "APPROVAL_INPROCESS_HOLD_SECONDS": "0.5",
    "AGENT_MAX_CONCURRENT_RUNS_PER_USER": "1000",  # one user has every conversation
}
KILL_SERVER_AT, RESTART_SERVER_AFTER = 2.0, 3.0
DEADLINE = 150.0
REF = re.compile(r"\[(c\d+)\]")


class Model:
    """The model: by the question's reference and kind and by how far the run is, with random latency."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.lock = threading.Lock()

    def latency(self, low: float, high: float) -> float:
        with self.lock:
            return self.random.uniform(low, high)

    def __call__(self, body: dict[str, Any]) -> Any:
        everything = json.dumps(body["messages"])
        ref = REF.search(everything).group(1)  # type: ignore[union-attr]
        paying = "Pay 60000" in everything
        if body.get("stream"):
            return text(
                f"Done for {ref}: " + "all is in order. " * 6, chunk_size=12, latency=self.latency(0.2, 0.6)
            )
        if not any(m["role"] == "tool" for m in body["messages"]):
            if paying:
                args = {"amount": 60000, "currency": "CNY", "ref": ref}
                return tool_calls(call("erp__create_payment", args), latency=self.latency(0.3, 0.6))
            return tool_calls(call("erp__list_payments", {"ref": ref}), latency=self.latency(0.8, 1.6))
        return text(f"Finished {ref}.", latency=self.latency(1.0, 2.0) if paying else self.latency(0.8, 1.6))


@dataclass
class Client:
    """One conversation's user: what it received, over all its connections."""

    conversation: str
    ref: str
    paying: bool
    first_server: str = ""
    asked: str = ""
    frames: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    reconnects: int = 0
    interruptions: list[float] = field(default_factory=list)
    needs_resume: bool = False
    approval: str | None = None
    done: bool = False

    @property
    def last_seq(self) -> int:
        return self.frames[-1]["seq"] if self.frames else 0


@dataclass
class Kill:
    what: str
    at: float
    runs: list[str]


class Chaos:
    def __init__(self, bench: BenchStack, world: dict[str, Any], args: argparse.Namespace) -> None:
        self.bench = bench
        self.world = world
        self.args = args
        self.random = random.Random(args.seed)
        self.servers: dict[int, RunningProcess | None] = {}
        self.worker: RunningProcess | None = None
        self.reconnects = 0
        self.kills: list[Kill] = []
        self.approvals: list[asyncio.Task[None]] = []
        self.started = time.monotonic()
        self.clients = [
            Client(conversation, f"c{n}", paying=n % 2 == 1)
            for n, conversation in enumerate(world["conversations"])
        ]

    # -- processes -------------------------------------------------------------------------------
    def live(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port, process in self.servers.items() if process is not None]

    def runs_held_by(self, pids: set[int]) -> list[str]:
        rows = postgres_query(
            self.bench.database_url, "SELECT id, lease_owner FROM agents_run WHERE status = 'running'"
        )
        return [str(run_id) for run_id, owner in rows if _owner_pid(owner) in pids]

    async def kill_server(self, port: int) -> None:
        await asyncio.sleep(KILL_SERVER_AT)
        process = self.servers[port]
        assert process is not None
        runs = await asyncio.to_thread(self.runs_held_by, {process.pid})
        self.servers[port] = None
        # Out of the group before it dies: a server starting meanwhile checks the group's processes alive.
        self.bench.group.processes.remove(process)
        process.popen.kill()
        process.popen.wait(10)
        self.kills.append(Kill(f"daphne :{port}", time.monotonic(), runs))
        await asyncio.sleep(RESTART_SERVER_AFTER)
        self.servers[port] = await asyncio.to_thread(self.bench.start_daphne, port)

    async def kill_worker(self) -> None:
        """SIGKILL the worker's whole process tree while it runs a resumed run; start a new worker."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            worker = self.worker
            assert worker is not None
            tree = _process_tree(worker.pid)
            runs = await asyncio.to_thread(self.runs_held_by, tree)
            if runs:
                await asyncio.sleep(self.random.uniform(0.2, 0.8))
                runs = await asyncio.to_thread(self.runs_held_by, tree) or runs
                # Out of the group before it dies: the daphne restarted meanwhile (kill_server, in a thread)
                # checks every process of the group alive while it waits for its server, and would take
                # this kill for a crash.
                self.bench.group.processes.remove(worker)
                for pid in sorted(tree, reverse=True):
                    _kill(pid)
                worker.popen.wait(10)
                self.kills.append(Kill("celery worker", time.monotonic(), runs))
                self.worker = self.bench.start_worker(concurrency=2)
                return
            await asyncio.sleep(0.1)

    async def progress(self) -> None:
        """A line on stderr every 10 s: how far the load is."""
        while not all(c.done for c in self.clients) or self.reconnects < self.args.reconnects:
            await asyncio.sleep(10)
            done = sum(c.done for c in self.clients)
            elapsed = time.monotonic() - self.started
            print(
                f"[{elapsed:5.0f} s] runs done {done}/{len(self.clients)}, reconnects {self.reconnects}, "
                f"kills {[k.what for k in self.kills]}",
                file=sys.stderr,
                flush=True,
            )
            if elapsed > DEADLINE:
                return

    # -- clients ---------------------------------------------------------------------------------
    async def open(self, client: Client, base: str | None = None) -> ClientConnection:
        while True:
            base = base if base in self.live() else self.random.choice(self.live())
            url = base.replace("http://", "ws://") + f"/ws/conversations/{client.conversation}/"
            try:
                ws = await connect(
                    url,
                    additional_headers={"Authorization": f"Bearer {self.world['requester_token']}"},
                    proxy=None,
                    compression=None,
                    ping_interval=None,
                    max_queue=None,
                    open_timeout=10,
                )
                await ws.send(json.dumps({"type": "resume", "after_seq": client.last_seq}))
                if client.needs_resume:
                    await ws.send(json.dumps({"type": "resume_run"}))
                if client.asked and not client.frames and not await self.run_started(client):
                    await ws.send(json.dumps({"type": "message", "content": client.asked}))  # never arrived
                return ws
            except (OSError, WebSocketException, TimeoutError):
                base = None
                await asyncio.sleep(0.05)  # that server is down: try another

    async def run_started(self, client: Client) -> bool:
        rows = await asyncio.to_thread(
            postgres_query,
            self.bench.database_url,
            "SELECT count(*) FROM agents_run WHERE conversation_id = %s",
            (client.conversation,),
        )
        return bool(rows[0][0])

    async def converse(self, client: Client, stagger: float) -> None:
        await asyncio.sleep(stagger)
        ws = await self.open(client, client.first_server)
        what = "Pay 60000 CNY to the supplier" if client.paying else "Which payments are open?"
        client.asked = f"{what} [{client.ref}]"
        await ws.send(json.dumps({"type": "message", "content": client.asked}))
        while not (client.done and self.reconnects >= self.args.reconnects):
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=self.random.uniform(0.05, 0.3))
            except TimeoutError:
                raw = None
            except ConnectionClosed:
                client.reconnects += 1
                ws = await self.open(client)
                continue
            if raw is not None:
                await self.receive(client, ws, json.loads(raw))
            # (not before the run's first event: a message on a socket closed at once may never arrive)
            if client.frames and self.reconnects < self.args.reconnects and self.random.random() < 0.35:
                self.reconnects += 1
                client.reconnects += 1
                await ws.close()
                ws = await self.open(client)
            if time.monotonic() - self.started > DEADLINE:
                client.violations.append("did not finish in time")
                break
        await ws.close()

    async def receive(self, client: Client, ws: ClientConnection, frame: dict[str, Any]) -> None:
        seq = frame["seq"]
        if seq is None:  # a socket-local error: e.g. resume_run raced another resume
            code = frame["data"].get("code")
            if code in ("nothing_to_resume", "run_active"):
                client.needs_resume = False
            else:
                client.violations.append(f"error {code}: {frame['data'].get('message')}")
            return
        if seq != client.last_seq + 1:
            client.violations.append(f"seq {seq} after {client.last_seq}")
            return
        client.frames.append(frame)
        data = frame["data"]
        if frame["event"] == "error" and data.get("code") == "run_interrupted":
            client.interruptions.append(time.monotonic())
            client.needs_resume = True
            await ws.send(json.dumps({"type": "resume_run"}))
        elif client.needs_resume and frame["event"] in ("step", "answer", "approval", "done"):
            client.needs_resume = False
        if frame["event"] == "approval" and data.get("status") == "pending" and client.approval is None:
            client.approval = data["approval_id"]
            self.approvals.append(asyncio.create_task(self.approve(client.approval)))
        if frame["event"] == "done":
            client.done = True

    async def approve(self, approval_id: str) -> None:
        await asyncio.sleep(self.random.uniform(1.0, 3.0))
        while True:
            base = self.random.choice(self.live())
            url = f"{base}/api/v1/orgs/{self.world['org']}/approvals/{approval_id}/decide/"
            try:
                async with httpx.AsyncClient(trust_env=False, timeout=20) as http:
                    response = await http.post(
                        url,
                        json={"decision": "approve", "comment": "chaos"},
                        headers={"Authorization": f"Bearer {self.world['approver_token']}"},
                    )
                if response.status_code in (200, 409):
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)


def _owner_pid(owner: str) -> int | None:
    parts = (owner or "").split("#")[0].split(":")
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None


def _process_tree(pid: int) -> set[int]:
    tree, changed = {pid}, True
    while changed:
        changed = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in tree:
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent in tree:
                tree.add(int(entry.name))
                changed = True
    return tree


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def main_async(args: argparse.Namespace) -> int:
    model = Model(args.seed)
    with (
        running_http_service() as erp,
        ScriptedOpenAIServer() as llm,
        BenchStack(extra_env=ENV) as bench,
    ):
        llm.script(*([model] * 5000))
        world = bench.world(
            "benchmarks.chaos_world", *world_args(llm.base_url, erp.base_url, args.conversations)
        )
        chaos = Chaos(bench, world, args)
        ports = [free_port(), free_port()]
        for port in ports:
            chaos.servers[port] = bench.start_daphne(port)
        for n, client in enumerate(chaos.clients):
            client.first_server = f"http://127.0.0.1:{ports[n % 2]}"  # half the runs start on A
        chaos.worker = bench.start_worker(concurrency=2)
        bench.group.start(beat_spec(schedule_file=LOG_DIR / "chaos-beat-schedule"))
        chaos.started = time.monotonic()
        clients = [chaos.converse(c, n * 0.04) for n, c in enumerate(chaos.clients)]
        try:
            await asyncio.gather(chaos.kill_server(ports[0]), chaos.kill_worker(), chaos.progress(), *clients)
        finally:
            for task in chaos.approvals:
                task.cancel()
            await asyncio.gather(*chaos.approvals, return_exceptions=True)
        problems, figures = await verify(chaos, erp)
    print(f"chaos ({machine_summary()})")
    for key, value in figures.items():
        print(f"{key:<36}{value}")
    if problems:
        print("FAILED:\n" + "\n".join(f"- {p}" for p in problems))
        return 1
    print(
        "OK: no event lost or duplicated for any client, every affected run interrupted then resumed, "
        "no connector call repeated"
    )
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", type=int, default=24)
    parser.add_argument("--reconnects", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--interrupt-within",
        type=float,
        default=30.0,
        help="seconds within which a run that lost its process must be interrupted",
    )
    raise SystemExit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
