"""A decision recorded by another process wakes the waiting run: a plain HTTP request to the API from
another thread (a real HTTP server), and a ``manage.py shell -c`` subprocess deciding for a run that waits
in a second subprocess on a shared file database, where no channel-layer message can reach the waiter."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from channels.db import database_sync_to_async

from agents.runs.manager import run_manager
from connectors.models import ConnectorCallLog
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory
from tests.hooks.scenario import build_purchasing

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("connector_tools")
async def test_an_api_decision_from_another_thread_wakes_the_waiting_run(
    scripted_llm, http_service, live_server, settings
):
    settings.APPROVAL_RECHECK_SECONDS = 0.3

    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        ApprovalPolicyFactory(
            organization=world.org, actions=[world.actions["create_payment"]], approver_users=[world.approver]
        )
        return world, api_token_issue(user=world.approver)[1]

    world, token = await database_sync_to_async(build)()
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": 60000, "currency": "CNY"}, id="p")),
        text("Paid."),
        text("Paid after approval."),
    )
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY"})
    pending = (await frames_until(ws, lambda f: f["event"] == "approval"))[-1]["data"]

    answer: dict = {}

    def decide_over_http() -> None:
        with httpx.Client(base_url=live_server.url, timeout=10) as client:
            response = client.post(
                f"/api/v1/orgs/{world.org.slug}/approvals/{pending['approval_id']}/decide/",
                json={"decision": "approve"},
                headers={"Authorization": f"Bearer {token}"},
            )
            answer["status"] = response.status_code

    thread = threading.Thread(target=decide_over_http)
    thread.start()
    await asyncio.to_thread(thread.join, 15)
    assert answer == {"status": 200}

    frames = await frames_until_done(ws)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)
    assert [f["data"]["status"] for f in frames if f["event"] == "approval"] == ["approved"]
    assert len(http_service.requests_to("/payments")) == 1
    assert (await ConnectorCallLog.objects.unscoped().aget(tool_call_id="p")).status == "ok"
    await ws.disconnect()


def _manage(*args: str, env: dict[str, str], **popen: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def _read_event(process: subprocess.Popen, kind: str, timeout: float = 30) -> dict:
    """The next JSON line of ``kind`` the process prints (its other output is skipped)."""
    result: dict = {}

    def reader() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            line = line.strip()
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("event") == kind:
                    result.update(event)
                    return

    worker = threading.Thread(target=reader, daemon=True)
    worker.start()
    worker.join(timeout)
    if not result:
        process.kill()
        raise AssertionError(f"no {kind} event; stderr: {process.stderr.read()[-3000:]}")  # type: ignore[union-attr]
    return result


def test_a_decision_from_a_separate_manage_py_shell_wakes_a_run_waiting_in_another_process(
    tmp_path, scripted_llm, http_service
):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'shared.sqlite3'}",
        "WAITER_LLM_URL": scripted_llm.base_url,
        "WAITER_ERP_URL": http_service.base_url,
    }
    env.pop("REDIS_URL", None)  # the in-memory channel layer: no message crosses processes
    migrate = _manage("migrate", "--noinput", env=env)
    assert migrate.wait(timeout=120) == 0, migrate.stderr.read()  # type: ignore[union-attr]
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": 60000, "currency": "CNY"}, id="x1")),
        text("Paid."),
    )
    waiter = _manage("shell", "-c", "from tests.hooks.cross_process_waiter import main; main()", env=env)
    try:
        pending = _read_event(waiter, "approval")
        assert pending["status"] == "pending"
        decider = _manage(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            "from hooks.models import ApprovalRequest; from hooks.services import approval_decide; "
            f"a = ApprovalRequest.objects.unscoped().get(pk='{pending['approval_id']}'); "
            "u = get_user_model().objects.get(username='waiter-april'); "
            "print(approval_decide(approval=a, decision='approve', via='web', actor=u).changed)",
            env=env,
        )
        out, err = decider.communicate(timeout=60)
        assert decider.returncode == 0 and out.strip().endswith("True"), err[-2000:]

        approved = _read_event(waiter, "approval")
        assert approved["status"] == "approved" and approved["decided_by"] == "waiter-april"
        done = _read_event(waiter, "done")
        assert done["tool_calls"] == [{"tool_call_id": "x1", "outcome": "ok"}]
        assert waiter.wait(timeout=30) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert [(r.method, r.path) for r in http_service.requests] == [("POST", "/payments")]
