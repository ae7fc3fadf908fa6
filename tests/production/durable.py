"""What the multi-process tests of durable runs share: a server of their own with its settings, the
sweeper as ``manage.py sweep_runs`` runs it, and reads of the run and its stream from outside."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from platform_core.wiring.deploy.services import postgres_query
from platform_core.wiring.deploy.stack import ROOT, ProcessGroup, daphne_spec
from tests.production.conftest import Stack

PAYMENT = {"amount": 60000, "currency": "CNY"}
# A lease lapses 2 s after its process stops renewing it, and an approval is held in process for 1 s
# before the run is parked.
SHORT_LEASES = {
    "RUN_LEASE_SECONDS": "2",
    "RUN_LEASE_RENEW_SECONDS": "0.5",
    "APPROVAL_INPROCESS_HOLD_SECONDS": "1",
}


@contextmanager
def extra_server(
    stack: Stack, log_dir: Path, settings: Mapping[str, str]
) -> Iterator[tuple[str, ProcessGroup]]:
    """A third daphne process with ``settings`` on top of the stack's (its own group: killing it leaves
    A and B alone)."""
    group = ProcessGroup(env={**stack.group.env, **settings}, log_dir=log_dir)
    try:
        process = group.start(daphne_spec(free_port(), name="daphne-c"))
        group.wait_ready(timeout=60)
        yield str(process.spec.base_url), group
    finally:
        group.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sweep(stack: Stack) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "manage.py", "sweep_runs"],
        cwd=ROOT,
        env=dict(stack.group.env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_row(stack: Stack, conversation: str) -> dict[str, Any]:
    rows = postgres_query(
        stack.database_url,
        "SELECT id, status, resumes, lease_owner FROM agents_run WHERE conversation_id = %s "
        "ORDER BY started_at DESC LIMIT 1",
        (conversation,),
    )
    assert rows, "the conversation has no run"
    run_id, status, resumes, owner = rows[0]
    return {"id": str(run_id), "status": status, "resumes": resumes, "lease_owner": owner}


async def until_status(stack: Stack, conversation: str, status: str, within: float = 20.0) -> dict[str, Any]:
    """The run once it has reached ``status`` (its process tells the test nothing: poll the database)."""
    deadline = time.monotonic() + within
    while True:
        row = await asyncio.to_thread(run_row, stack, conversation)
        if row["status"] == status:
            return row
        assert time.monotonic() < deadline, f"the run is still {row['status']}, not {status}"
        await asyncio.sleep(0.1)


async def events(stack: Stack, base_url: str, conversation: str) -> list[dict[str, Any]]:
    async with stack.api(base_url, stack.world["requester_token"]) as api:
        response = await api.get(
            f"/conversations/{conversation}/events/", params={"after_seq": 0, "limit": 500}
        )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def call_logs(stack: Stack, conversation: str) -> list[tuple[str, str]]:
    async with stack.api(stack.b, stack.world["requester_token"]) as api:
        response = await api.get("/call-logs/", params={"conversation_id": conversation})
    assert response.status_code == 200, response.text
    return [(log["tool_call_id"], log["status"]) for log in response.json()["results"]]


def assert_every_event_once(frames: list[dict[str, Any]]) -> None:
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
