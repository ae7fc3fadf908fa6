"""Approval storm: duplicate and concurrent Feishu callbacks plus web decisions on the same requests.

    .venv/bin/python benchmarks/approval_storm.py [--requests 20]

Two daphne servers (A and B) and a Celery worker on PostgreSQL and Redis. ``--requests`` runs, started
on A, each ask to pay a large amount and wait for approval; the worker posts every card to the fake
Feishu. Then, for every request at once, all of these land concurrently, spread over both servers:

- the same signed click delivered ``--duplicates`` times (Feishu retrying one event),
- ``--clicks`` further clicks on Approve (new events, as from a double tap or a second device),
- ``--web`` approvals through the REST API (``approvals/<id>/decide/``).

Expected, and checked for every request: exactly one decision (one ``approval.approved`` audit row, one
attempt told it changed the request), one resume of the waiting run (one ``approved`` event and one
``done`` in its stream), and one connector call (one ERP request, one call-log row). Everything else is
told the request was already decided (Feishu: an info toast; web: 409) or refused as a replay (409).
The script prints the counts and exits non-zero if any request broke the rule. Loopback only; bounded.
Tiny, for ``make bench-smoke``: ``--requests 2 --duplicates 2 --clicks 1 --web 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402

from benchmarks.common import BenchStack, free_port, machine_summary, percentile  # noqa: E402
from platform_core.wiring.deploy.services import postgres_query  # noqa: E402
from tests.fakes.feishu_server import FakeFeishu  # noqa: E402
from tests.fakes.http_service import LoopbackHTTPService, running_http_service  # noqa: E402
from tests.fakes.openai_server import ScriptedOpenAIServer, call, text, tool_calls  # noqa: E402

BOSS = "ou_boss"
BASE_AMOUNT = 60000
TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class Attempt:
    """One decision attempt and what the server answered."""

    approval: str
    kind: str
    status: int
    outcome: str
    seconds: float


def model_reply(body: dict[str, Any]):
    """The scripted model: pay the amount the question names, then report it."""
    messages = body.get("messages") or []
    if body.get("stream"):
        return text("The payment was approved and has been made.")
    if messages and messages[-1].get("role") == "tool":
        return text("Paid.")
    question = next(str(m.get("content")) for m in reversed(messages) if m.get("role") == "user")
    amount = int(question.split()[1])
    return tool_calls(call("erp__create_payment", {"amount": amount, "currency": "CNY"}, id=f"pay-{amount}"))


async def open_socket(base: str, conversation: str, token: str) -> ClientConnection:
    url = base.replace("http://", "ws://", 1) + f"/ws/conversations/{conversation}/"
    return await connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}, proxy=None, compression=None
    )


async def frames_until(ws: ClientConnection, predicate) -> list[dict[str, Any]]:
    frames = []
    async with asyncio.timeout(TIMEOUT):
        while True:
            frames.append(json.loads(await ws.recv(decode=True)))
            if frames[-1]["seq"] is None:
                raise SystemExit(f"the server refused: {frames[-1]['data']}")
            if predicate(frames[-1]):
                return frames


def is_pending(frame: dict[str, Any]) -> bool:
    return frame["event"] == "approval" and frame["data"]["status"] == "pending"


def is_done(frame: dict[str, Any]) -> bool:
    return frame["event"] == "done"


async def wait_for_cards(fake: FakeFeishu, approval_ids: list[str]) -> None:
    def delivered() -> None:
        deadline = time.monotonic() + TIMEOUT
        while not all(fake.message_for(a) for a in approval_ids):
            if time.monotonic() > deadline:
                raise SystemExit("the worker did not deliver every approval card")
            time.sleep(0.05)

    await asyncio.to_thread(delivered)


async def storm(
    args: argparse.Namespace,
    fake: FakeFeishu,
    servers: list[str],
    world: dict[str, Any],
    approvals: list[str],
) -> list[Attempt]:
    """Fire every decision attempt for every request at once."""
    channel = world["channel"]
    attempts: list[tuple[str, str, Any]] = []
    for index, approval in enumerate(approvals):
        click = fake.build_click(operator_open_id=BOSS, approval_id=approval, decision="approve")
        for n in range(args.duplicates):
            attempts.append((approval, "feishu duplicate", (servers[(index + n) % 2], click)))
        for n in range(args.clicks):
            again = fake.build_click(operator_open_id=BOSS, approval_id=approval, decision="approve")
            attempts.append((approval, "feishu click", (servers[(index + n + 1) % 2], again)))
        for n in range(args.web):
            attempts.append((approval, "web decision", servers[(index + n) % 2]))

    limits = httpx.Limits(max_connections=len(attempts), max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=30, limits=limits, trust_env=False) as client:

        async def attempt(approval: str, kind: str, target: Any) -> Attempt:
            started = time.perf_counter()
            if kind == "web decision":
                response = await client.post(
                    f"{target}/api/v1/orgs/{world['org']}/approvals/{approval}/decide/",
                    json={"decision": "approve", "comment": "storm"},
                    headers={"Authorization": f"Bearer {world['approver_token']}"},
                )
                outcome = {200: "decided", 409: "already decided"}.get(response.status_code, "error")
            else:
                server, click = target
                response = await client.post(
                    f"{server}/integrations/feishu/{channel}/callback/",
                    content=click.body,
                    headers=click.headers,
                )
                toast = (response.json().get("toast") or {}).get("type", "")
                outcome = {"success": "decided", "info": "already decided"}.get(toast, f"refused ({toast})")
                if response.status_code == 409:
                    outcome = "replay refused"
            return Attempt(approval, kind, response.status_code, outcome, time.perf_counter() - started)

        return await asyncio.gather(*(attempt(a, k, t) for a, k, t in attempts))


def count_rows(stack: BenchStack, sql: str, params: tuple[Any, ...]) -> collections.Counter[str]:
    return collections.Counter(str(row[0]) for row in postgres_query(stack.database_url, sql, params))


async def main_async(args: argparse.Namespace) -> int:
    llm, fake = ScriptedOpenAIServer(), FakeFeishu()
    llm.start()
    fake.start()
    try:
        # One requester asks for every payment at once: lift the per-user limit of concurrent runs.
        limit = {"AGENT_MAX_CONCURRENT_RUNS_PER_USER": str(args.requests + 1)}
        with running_http_service() as erp, BenchStack(extra_env=limit) as stack:
            world = stack.world(
                "tests.production.world",
                "--llm",
                llm.base_url,
                "--erp",
                erp.base_url,
                "--feishu",
                fake.base_url,
            )
            servers = [str(stack.start_daphne(free_port()).spec.base_url) for _ in range(2)]
            stack.start_worker()
            llm.script(*([model_reply] * (args.requests * 3)))
            return await run(args, stack, erp, fake, servers, world)
    finally:
        llm.stop()
        fake.stop()


async def run(
    args: argparse.Namespace,
    stack: BenchStack,
    erp: LoopbackHTTPService,
    fake: FakeFeishu,
    servers: list[str],
    world: dict[str, Any],
) -> int:
    a = servers[0]
    headers = {"Authorization": f"Bearer {world['requester_token']}"}
    async with httpx.AsyncClient(
        base_url=f"{a}/api/v1/orgs/{world['org']}", headers=headers, trust_env=False
    ) as api:
        conversations = [
            (await api.post("/conversations/", json={"agent": world["agent"]})).json()["id"]
            for _ in range(args.requests)
        ]
    sockets = [await open_socket(a, c, world["requester_token"]) for c in conversations]
    for index, ws in enumerate(sockets):
        await ws.send(
            json.dumps({"type": "message", "content": f"Pay {BASE_AMOUNT + index} CNY to supplier {index}"})
        )
    pending = await asyncio.gather(*(frames_until(ws, is_pending) for ws in sockets))
    approvals = [frames[-1]["data"]["approval_id"] for frames in pending]
    await wait_for_cards(fake, approvals)

    started = time.perf_counter()
    results = await storm(args, fake, servers, world, approvals)
    storm_seconds = time.perf_counter() - started
    streams = await asyncio.gather(*(frames_until(ws, is_done) for ws in sockets))
    for ws in sockets:
        await ws.close()

    decisions = count_rows(
        stack,
        "SELECT target_id FROM platform_core_auditlog WHERE action LIKE 'approval.%%' AND target_id = ANY(%s)",
        (approvals,),
    )
    call_logs = count_rows(
        stack,
        "SELECT tool_call_id FROM connectors_connectorcalllog WHERE tool_call_id = ANY(%s) AND status = 'ok'",
        ([f"pay-{BASE_AMOUNT + i}" for i in range(args.requests)],),
    )
    statuses = dict(
        postgres_query(
            stack.database_url,
            "SELECT id::text, status FROM hooks_approvalrequest WHERE id::text = ANY(%s)",
            (approvals,),
        )
    )
    payments = collections.Counter(json.loads(r.body)["amount"] for r in erp.requests_to("/payments"))

    expected = {"decisions": 1, "told decided": 1, "status": "approved", "resumes": 1, "done": 1}
    expected.update({"erp calls": 1, "call logs": 1})
    per_request = []
    for index, approval in enumerate(approvals):
        stream, tool_call_id = streams[index], f"pay-{BASE_AMOUNT + index}"
        per_request.append(
            {
                "decisions": decisions[approval],
                "told decided": sum(1 for r in results if r.approval == approval and r.outcome == "decided"),
                "status": statuses.get(approval),
                "resumes": sum(
                    1 for f in stream if f["event"] == "approval" and f["data"]["status"] != "pending"
                ),
                "done": sum(1 for f in stream if f["event"] == "done"),
                "erp calls": payments[BASE_AMOUNT + index],
                "call logs": call_logs[tool_call_id],
            }
        )
    broken = [(a, row) for a, row in zip(approvals, per_request, strict=True) if row != expected]

    outcomes = collections.Counter((r.kind, r.status, r.outcome) for r in results)
    callbacks = [r.seconds for r in results if r.kind != "web decision"]
    print(f"machine: {machine_summary()}")
    print(
        f"{args.requests} requests waiting in server A; per request {args.duplicates} deliveries of one click, "
        f"{args.clicks} more clicks and {args.web} web decisions, spread over A and B: "
        f"{len(results)} attempts at once, answered in {storm_seconds:.2f} s "
        f"(Feishu callbacks answered in p50 {percentile(callbacks, 50):.2f} s, p99 {percentile(callbacks, 99):.2f} s, "
        f"max {max(callbacks):.2f} s; Feishu waits 3 s)"
    )
    print()
    print("attempt            HTTP  outcome            count")
    print("-" * 50)
    for (kind, status, outcome), count in sorted(outcomes.items()):
        print(f"{kind:<18} {status:>4}  {outcome:<17} {count:>6}")
    print()
    totals = {key: collections.Counter(str(r[key]) for r in per_request) for key in per_request[0]}
    print("per request        values (count of requests)")
    print("-" * 50)
    for key, counter in totals.items():
        print(f"{key:<18} " + ", ".join(f"{value} ({count})" for value, count in sorted(counter.items())))
    print()
    if broken:
        print(f"BROKEN: {len(broken)} requests: {broken[:5]}")
        for approval, _row in broken[:5]:
            explain_broken(stack, approval, streams[approvals.index(approval)])
        return 1
    print(f"OK: every one of {args.requests} requests: exactly one decision, one resume, one tool call")
    return 0


def explain_broken(stack: BenchStack, approval: str, stream: list[dict[str, Any]]) -> None:
    """What a broken request's run did: its call-log rows (any status), its approval and tool-call steps."""
    logs = postgres_query(
        stack.database_url,
        "SELECT l.tool_call_id, l.status, l.http_status, l.error FROM connectors_connectorcalllog l "
        "JOIN hooks_approvalrequest a ON a.run_id::text = l.run_id WHERE a.id::text = %s ORDER BY l.id",
        (approval,),
    )
    print(f"  {approval}: call logs {list(logs)}")
    telling = [
        f
        for f in stream
        if f.get("event") in ("approval", "error", "done")
        or ((f.get("data") or {}).get("type") == "iteration" and f["data"].get("status") == "done")
    ]
    for frame in telling[-8:]:
        data = frame.get("data") or {}
        detail = {
            k: data[k] for k in ("type", "status", "code", "message", "error", "observation") if k in data
        }
        print(f"    #{frame.get('seq')} {frame.get('event')} {json.dumps(detail, ensure_ascii=False)[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--duplicates", type=int, default=4)
    parser.add_argument("--clicks", type=int, default=3)
    parser.add_argument("--web", type=int, default=4)
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
