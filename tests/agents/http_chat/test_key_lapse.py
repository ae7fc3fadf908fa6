"""A revoked or expired API key loses its open streams: the run's Server-Sent Events stream and the
OpenAI-compatible completion (streamed or waiting) end within seconds, and nothing that happens in the
run afterwards reaches the client. The run itself goes on (as after any disconnect)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import openai
import pytest
from django.utils import timezone

from agents.models import RunEvent
from hooks.models import ApprovalRequest
from platform_core.identity.api_keys.keys import api_key_create, api_token_issue
from tests.agents.http_chat.conftest import PAYMENT, sse_events, wait_for
from tests.fakes.openai_server import call, hang, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

CUT_WITHIN = 5.0  # seconds: issue #31's bound for every kind of stream
MODEL = "acme/Purchasing assistant"


def _base(world: Any) -> str:
    return f"/api/v1/orgs/{world.org.slug}/conversations/{world.conversation.pk}"


def _revoke_over_the_api(live: Any, user: Any, key_id: int) -> None:
    """The owner revokes the key as a person would: over the REST API of the same server."""
    admin = live.client(api_token_issue(user=user, name="owner")[1])
    assert admin.post(f"/api/v1/api-keys/{key_id}/revoke/").status_code == 200


class _Follower:
    """Reads one SSE stream in a thread, recording its events and when it ended."""

    def __init__(self, client: Any, url: str) -> None:
        self.events: list[Any] = []
        self.ended = threading.Event()
        self.ended_at = 0.0
        self.status = 0
        self._thread = threading.Thread(target=self._read, args=(client, url), daemon=True)
        self._thread.start()

    def _read(self, client: Any, url: str) -> None:
        try:
            with client.stream("GET", url, timeout=60) as response:
                self.status = response.status_code
                for event in sse_events(response.iter_lines()):
                    self.events.append(event)
        finally:
            self.ended_at = time.monotonic()
            self.ended.set()

    def frames(self) -> list[dict[str, Any]]:
        return [e.json for e in self.events if e.data]


def test_revoking_a_key_ends_its_open_sse_stream_and_the_run_goes_on_without_it(
    live_server_url, purchasing, scripted_llm, erp
):
    # given a stream opened with a key, on a run waiting for an approval
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")),
        text("Paid."),
        text("The payment of 60,000 CNY was made.", chunk_size=6),
    )
    key, raw = api_token_issue(user=purchasing.requester, name="stream")
    client = live_server_url.client(raw)
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Pay 60000 CNY"}).json()["run_id"]
    url = f"{_base(purchasing)}/runs/{run_id}/stream/"
    follower = _Follower(client, url)
    wait_for(lambda: any(f["event"] == "approval" for f in follower.frames()))
    seen = len(follower.frames())

    # when the key is revoked
    _revoke_over_the_api(live_server_url, purchasing.requester, key.pk)
    revoked_at = time.monotonic()

    # then the stream ends within the bound, saying why, with no seq of its own
    assert follower.ended.wait(CUT_WITHIN), "the stream outlived its key"
    assert follower.ended_at - revoked_at <= CUT_WITHIN
    closing = follower.events[-1]
    assert closing.event == "error" and closing.id is None
    assert closing.json["seq"] is None and closing.json["data"]["code"] == "api_key_revoked"
    assert len(follower.frames()) == seen + 1
    # the run goes on: the approver decides and it finishes, but nothing more reaches the revoked key
    approval = ApprovalRequest.objects.unscoped().get()
    approver = live_server_url.client(api_token_issue(user=purchasing.approver, name="approver")[1])
    decided = approver.post(
        f"/api/v1/orgs/{purchasing.org.slug}/approvals/{approval.pk}/decide/", json={"decision": "approve"}
    )
    assert decided.status_code == 200, decided.text
    wait_for(lambda: RunEvent.objects.filter(run_id=run_id, event="done").exists())
    assert len(follower.frames()) == seen + 1
    # and the key cannot open the stream again
    last_seq = follower.frames()[-2]["seq"]
    again = client.get(url, headers={"Last-Event-ID": str(last_seq)})
    assert again.status_code == 401


def test_a_key_that_expires_while_its_stream_is_open_ends_the_stream(
    live_server_url, purchasing, scripted_llm
):
    # given a key that expires in five seconds, following a run that is still thinking
    scripted_llm.script(hang(30))
    expires_at = timezone.now() + timedelta(seconds=5)
    created = api_key_create(
        name="short", scopes=["chat"], owner=purchasing.requester, actor=None, expires_at=expires_at
    )
    client = live_server_url.client(created.raw)
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Think"}).json()["run_id"]
    follower = _Follower(client, f"{_base(purchasing)}/runs/{run_id}/stream/")
    wait_for(lambda: scripted_llm.requests)
    assert not follower.ended.is_set()

    # then the stream ends once the expiry passes, within the bound
    remaining = (expires_at - timezone.now()).total_seconds()
    assert follower.ended.wait(remaining + CUT_WITHIN), "the stream outlived its key's expiry"
    assert timezone.now() >= expires_at
    closing = follower.events[-1]
    assert closing.event == "error" and closing.json["data"]["code"] == "api_key_expired"


def _sdk(live: Any, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key=token, max_retries=0, timeout=60)


def test_revoking_a_key_ends_its_openai_stream_with_an_error_the_sdk_raises(
    live_server_url, purchasing, scripted_llm, settings, erp
):
    # given a streamed completion waiting for an approval (the response would wait a minute)
    settings.OPENAI_COMPAT_APPROVAL_WAIT_SECONDS = 60
    scripted_llm.script(tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")))
    key, raw = api_token_issue(user=purchasing.requester, name="sdk")
    stream = _sdk(live_server_url, raw).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Pay 60000 CNY"}], stream=True
    )
    chunks: list[Any] = []
    outcome: dict[str, Any] = {}
    waiting, ended = threading.Event(), threading.Event()

    def read() -> None:
        try:
            for chunk in stream:
                chunks.append(chunk)
                if chunk.choices and "Waiting for approval" in (chunk.choices[0].delta.content or ""):
                    waiting.set()
        except openai.APIError as error:
            outcome["error"] = error
        finally:
            outcome["at"] = time.monotonic()
            ended.set()

    threading.Thread(target=read, daemon=True).start()
    assert waiting.wait(15)

    # when the key is revoked
    _revoke_over_the_api(live_server_url, purchasing.requester, key.pk)
    revoked_at = time.monotonic()

    # then the SDK's stream raises within the bound, with OpenAI's authentication error
    assert ended.wait(CUT_WITHIN), "the completion stream outlived its key"
    assert outcome["at"] - revoked_at <= CUT_WITHIN
    error = outcome.get("error")
    assert error is not None and error.body["code"] == "api_key_revoked"
    assert error.body["type"] == "authentication_error"


def test_revoking_a_key_ends_its_waiting_completion_with_a_401(
    live_server_url, purchasing, scripted_llm, settings, erp
):
    settings.OPENAI_COMPAT_APPROVAL_WAIT_SECONDS = 60
    scripted_llm.script(tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")))
    key, raw = api_token_issue(user=purchasing.requester, name="sdk")
    outcome: dict[str, Any] = {}
    ended = threading.Event()

    def ask() -> None:
        try:
            _sdk(live_server_url, raw).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Pay 60000 CNY"}]
            )
        except openai.APIError as error:
            outcome["error"] = error
        finally:
            outcome["at"] = time.monotonic()
            ended.set()

    threading.Thread(target=ask, daemon=True).start()
    wait_for(lambda: ApprovalRequest.objects.unscoped().filter(status="pending").exists())

    _revoke_over_the_api(live_server_url, purchasing.requester, key.pk)
    revoked_at = time.monotonic()

    assert ended.wait(CUT_WITHIN), "the completion outlived its key"
    assert outcome["at"] - revoked_at <= CUT_WITHIN
    error = outcome.get("error")
    assert isinstance(error, openai.AuthenticationError) and error.body["code"] == "api_key_revoked"
