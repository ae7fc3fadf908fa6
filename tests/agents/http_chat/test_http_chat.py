"""Chat over HTTP against a real daphne server: a posted message starts a run (or joins the running one),
its Server-Sent Events stream carries the websocket's events and seq, resumes with Last-Event-ID, and a
cancel stops the run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agents.models import Message, Run, RunEvent, RunStatus
from agents.runs.events.store import events_after_sync
from connectors.models import ConnectorCallLog
from hooks.models import ApprovalRequest
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.http_chat.conftest import PAYMENT, sse_events, wait_for
from tests.fakes.openai_server import call, hang, text, tool_calls
from tests.production.ws_client import ws_open

pytestmark = pytest.mark.django_db(transaction=True)


def _token(user: Any) -> str:
    return api_token_issue(user=user, name="http-chat-test")[1]


def _base(world: Any) -> str:
    return f"/api/v1/orgs/{world.org.slug}/conversations/{world.conversation.pk}"


def _stream(client: Any, url: str, *, last_event_id: int | None = None, until: Any = None) -> list[Any]:
    """The SSE events of ``url`` (comments included) until the stream ends or ``until(event)`` says stop
    (the connection is then dropped)."""
    headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
    events = []
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in sse_events(response.iter_lines()):
            events.append(event)
            if until is not None and until(event):
                break
    return events


def _frames(events: list[Any]) -> list[dict[str, Any]]:
    return [event.json for event in events if event.data]


def test_a_posted_message_starts_a_run_and_its_stream_carries_the_stored_events_with_seq_as_id(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="list-1")),
        text("There are no payments."),
        text("There are no payments yet.", chunk_size=5),
    )
    client = live_server_url.client(_token(purchasing.requester))

    posted = client.post(f"{_base(purchasing)}/messages/", json={"content": "Which payments are there?"})

    assert posted.status_code == 202, posted.text
    body = posted.json()
    run = Run.objects.unscoped().get(pk=body["run_id"])
    assert run.conversation_id == purchasing.conversation.pk and run.user_id == purchasing.requester.pk
    assert body["follow_up"] is False and body["stream_url"].endswith(f"/runs/{run.pk}/stream/")
    events = _stream(client, body["stream_url"])
    frames = _frames(events)
    assert [e.id for e in events if e.data] == [str(f["seq"]) for f in frames]
    assert [e.event for e in events if e.data] == [f["event"] for f in frames]
    assert frames == events_after_sync(purchasing.conversation.pk, 0)  # what the websocket replays
    assert frames[-1]["event"] == "done" and frames[-1]["data"]["answer"] == "There are no payments yet."
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert Run.objects.unscoped().get(pk=run.pk).status == RunStatus.DONE
    assert list(ConnectorCallLog.objects.unscoped().values_list("tool_call_id", flat=True)) == ["list-1"]


async def test_the_sse_stream_and_the_websocket_carry_the_same_frames(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="list-1")),
        text("None."),
        text("No payments so far.", chunk_size=4),
    )
    token = await asyncio.to_thread(_token, purchasing.requester)
    ws = await ws_open(live_server_url.url, str(purchasing.conversation.pk), token)
    try:
        await ws.send(json.dumps({"type": "resume", "after_seq": 0}))
        client = live_server_url.client(token)
        posted = await asyncio.to_thread(
            client.post, f"{_base(purchasing)}/messages/", json={"content": "Any payments?"}
        )
        run_id = posted.json()["run_id"]
        over_ws = []
        while not over_ws or over_ws[-1]["event"] != "done":
            over_ws.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
    finally:
        await ws.close()
    over_sse = _frames(await asyncio.to_thread(_stream, client, f"{_base(purchasing)}/runs/{run_id}/stream/"))

    assert over_sse == over_ws
    assert {f["run_id"] for f in over_sse} == {run_id}


def test_a_stream_dropped_midway_resumes_with_last_event_id_losing_and_repeating_nothing(
    live_server_url, purchasing, scripted_llm, settings
):
    settings.HTTP_CHAT_HEARTBEAT_SECONDS = 0.2
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="list-1")),
        hang(0.6, then=text("Nothing to pay.")),
        text("Nothing is waiting to be paid.", chunk_size=3),
    )
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "What is to pay?"}).json()[
        "run_id"
    ]
    url = f"{_base(purchasing)}/runs/{run_id}/stream/"

    # the client sees the tool call, then its connection drops while the model thinks
    first = _frames(_stream(client, url, until=lambda e: e.data and e.json["data"].get("status") == "done"))
    assert first[-1]["event"] == "step"
    # it reconnects with the last id it saw, as EventSource does
    second_events = _stream(client, url, last_event_id=first[-1]["seq"])
    second = _frames(second_events)

    stored = events_after_sync(purchasing.conversation.pk, 0)
    assert first + second == stored
    assert len({f["seq"] for f in first + second}) == len(stored)
    assert second[-1]["event"] == "done"
    assert any("heartbeat" in e.comments for e in second_events)  # the quiet model call was kept alive
    # a stream of a finished run replays it and ends; after the last seq it is empty and ends at once
    assert _frames(_stream(client, url)) == stored
    assert _frames(_stream(client, f"{url}?after_seq={stored[-1]['seq']}")) == []


def test_a_message_posted_while_the_run_waits_for_an_approval_joins_that_run(
    live_server_url, purchasing, scripted_llm, erp
):
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")),
        text("Paid, and noted the reference."),
        text("The payment of 60,000 CNY was made; reference ACME-7 noted.", chunk_size=6),
    )
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Pay 60000 CNY"}).json()["run_id"]
    url = f"{_base(purchasing)}/runs/{run_id}/stream/"

    # the stream shows the waiting state: the websocket's approval event, naming the approver
    waiting = _frames(_stream(client, url, until=lambda e: e.event == "approval"))
    approval = waiting[-1]["data"]
    assert approval["status"] == "pending" and approval["tool_name"] == "erp__create_payment"
    assert approval["approvers"] and erp.requests_to("/payments") == []

    follow_up = client.post(f"{_base(purchasing)}/messages/", json={"content": "Use reference ACME-7."})
    assert follow_up.status_code == 202
    assert follow_up.json()["run_id"] == run_id and follow_up.json()["follow_up"] is True
    assert Message.objects.get(pk=follow_up.json()["message_id"]).injected

    decided = live_server_url.client(_token(purchasing.approver)).post(
        f"/api/v1/orgs/{purchasing.org.slug}/approvals/{approval['approval_id']}/decide/",
        json={"decision": "approve"},
    )
    assert decided.status_code == 200, decided.text
    rest = _frames(_stream(client, url, last_event_id=waiting[-1]["seq"]))
    assert [f["data"]["status"] for f in rest if f["event"] == "approval"] == ["approved"]
    assert [f["data"]["content"] for f in rest if f["event"] == "inject"] == ["Use reference ACME-7."]
    assert rest[-1]["event"] == "done" and "ACME-7" in rest[-1]["data"]["answer"]
    assert [r.json() for r in erp.requests_to("/payments")] == [PAYMENT]
    assert Run.objects.unscoped().filter(conversation=purchasing.conversation).count() == 1
    assert (
        ApprovalRequest.objects.unscoped().get(pk=approval["approval_id"]).run_id
        == Run.objects.unscoped().get().pk
    )


def test_at_the_users_run_limit_a_message_to_the_busy_conversation_still_joins_its_run(
    live_server_url, purchasing, scripted_llm, settings
):
    # Given a user at her limit of one running run, that run working in this conversation
    settings.AGENT_MAX_CONCURRENT_RUNS_PER_USER = 1
    scripted_llm.script(hang(30))
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Think hard"}).json()["run_id"]
    wait_for(lambda: scripted_llm.requests)

    # When she sends another message to it
    follow_up = client.post(f"{_base(purchasing)}/messages/", json={"content": "Only 2024, please."})

    # Then it joins that run, as over the websocket: it is no new run the limit would refuse
    assert follow_up.status_code == 202, follow_up.text
    assert follow_up.json()["run_id"] == run_id and follow_up.json()["follow_up"] is True
    client.post(f"{_base(purchasing)}/runs/{run_id}/cancel/")
    wait_for(lambda: Run.objects.unscoped().get(pk=run_id).status == RunStatus.CANCELLED)


def test_cancel_stops_a_working_run_and_its_stream_ends_with_a_cancelled_done(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(hang(30))
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Think hard"}).json()["run_id"]
    wait_for(lambda: scripted_llm.requests)  # the run is waiting for the model

    cancelled = client.post(f"{_base(purchasing)}/runs/{run_id}/cancel/")

    assert cancelled.status_code == 202 and cancelled.json() == {"run_id": run_id, "status": "cancelling"}
    frames = _frames(_stream(client, f"{_base(purchasing)}/runs/{run_id}/stream/"))
    assert frames[-1]["event"] == "done" and frames[-1]["data"]["cancelled"] is True
    assert wait_for(lambda: Run.objects.unscoped().get(pk=run_id).status == RunStatus.CANCELLED)
    again = client.post(f"{_base(purchasing)}/runs/{run_id}/cancel/")
    assert again.status_code == 409


def test_an_empty_message_is_refused_and_starts_nothing(live_server_url, purchasing):
    client = live_server_url.client(_token(purchasing.requester))

    refused = client.post(f"{_base(purchasing)}/messages/", json={"content": "   "})

    assert refused.status_code == 400 and "content" in refused.json()
    assert not Run.objects.unscoped().exists()


def test_a_bad_last_event_id_is_refused(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("Hi."), text("Hello."))
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Hi"}).json()["run_id"]

    response = client.get(f"{_base(purchasing)}/runs/{run_id}/stream/", headers={"Last-Event-ID": "abc"})

    assert response.status_code == 400
    _stream(client, f"{_base(purchasing)}/runs/{run_id}/stream/")  # let the run finish


@pytest.mark.cross_org("conversation-messages", "conversation-run-stream", "conversation-run-cancel")
def test_another_users_or_organisations_conversation_and_run_are_404(
    live_server_url, purchasing, scripted_llm
):
    from tests.factories import OrganizationFactory, member_of

    scripted_llm.script(text("Hi."), text("Hello."))
    owner = live_server_url.client(_token(purchasing.requester))
    run_id = owner.post(f"{_base(purchasing)}/messages/", json={"content": "Hi"}).json()["run_id"]
    _stream(owner, f"{_base(purchasing)}/runs/{run_id}/stream/")
    colleague = live_server_url.client(_token(purchasing.approver))  # same org, not their conversation
    other_org = OrganizationFactory(slug="globex")
    outsider = live_server_url.client(_token(member_of(other_org, username="gus")))
    foreign_base = f"/api/v1/orgs/globex/conversations/{purchasing.conversation.pk}"

    for client, base in (
        (colleague, _base(purchasing)),
        (outsider, _base(purchasing)),
        (outsider, foreign_base),
    ):
        assert client.post(f"{base}/messages/", json={"content": "Hi"}).status_code == 404
        assert client.get(f"{base}/runs/{run_id}/stream/").status_code == 404
        assert client.post(f"{base}/runs/{run_id}/cancel/").status_code == 404
    assert Run.objects.unscoped().count() == 1
    assert RunEvent.objects.filter(run_id=run_id).last().event == "done"


def test_the_stream_answers_the_accept_header_every_eventsource_sends(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(text("Hi."), text("Hello."))
    client = live_server_url.client(_token(purchasing.requester))
    run_id = client.post(f"{_base(purchasing)}/messages/", json={"content": "Hi"}).json()["run_id"]
    url = f"{_base(purchasing)}/runs/{run_id}/stream/"

    with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = [e.json for e in sse_events(response.iter_lines()) if e.data]
    assert frames[-1]["event"] == "done"
    # an error still comes as JSON, whatever the client accepts
    missing = client.get(
        url.replace(run_id, "00000000-0000-0000-0000-000000000000"), headers={"Accept": "text/event-stream"}
    )
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/json")


def test_a_run_posted_over_http_stops_in_the_requests_interface_language_not_the_questions(
    live_server_url, purchasing, scripted_llm
):
    # given an agent allowed one iteration and a model that keeps calling tools
    purchasing.agent.max_iterations = 1
    purchasing.agent.save(update_fields=["max_iterations"])
    scripted_llm.script(tool_calls(call("erp__list_payments", {}, id="list-1")))
    client = live_server_url.client(_token(purchasing.requester))

    # when the user, whose interface is Chinese, asks in English
    posted = client.post(
        f"{_base(purchasing)}/messages/",
        json={"content": "Which payments are there?"},
        headers={"Accept-Language": "zh-hans"},
    )
    assert posted.status_code == 202, posted.text
    events = _stream(client, posted.json()["stream_url"])

    # then the run knows the interface language and its stop message is Chinese
    run = Run.objects.unscoped().get(pk=posted.json()["run_id"])
    assert run.language == "zh-hans"
    done = next(frame for frame in _frames(events) if frame["event"] == "done")
    assert done["data"]["stop_reason"] == "max_iterations"
    assert "已达到 1 次迭代上限" in done["data"]["answer"]
