"""The fake Feishu server speaks Feishu's wire format, and its clicks are what Feishu would send."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx
import pytest

from hooks.feishu.callback import (
    CallbackRejected,
    CallbackSecrets,
    CardAction,
    UrlVerification,
    parse_callback,
    toast_reply,
    url_verification_reply,
)
from hooks.feishu.cards import approval_decided_card, approval_pending_card
from tests.fakes.feishu_server import (
    FAKE_ENCRYPT_KEY,
    FAKE_VERIFICATION_TOKEN,
    CallbackRequest,
    FakeFeishu,
    validate_card,
)

# Until the root conftest registers this plugin for the whole suite.

APPROVER = "ou_april"
MESSAGES = "/open-apis/im/v1/messages"


class CallbackStandIn:
    """A minimal WSGI stand-in for our callback view: check, authorise, decide once, answer a toast."""

    def __init__(self, fake: FakeFeishu) -> None:
        self.fake = fake
        self.secrets = CallbackSecrets(
            verification_token=FAKE_VERIFICATION_TOKEN, encrypt_key=FAKE_ENCRYPT_KEY
        )
        self.seen: set[str] = set()
        self.decisions: dict[str, tuple[str, str]] = {}
        self.actions: list[CardAction] = []
        self._lock = threading.Lock()

    def add_if_absent(self, event_id: str) -> bool:
        with self._lock:
            if event_id in self.seen:
                return False
            self.seen.add(event_id)
            return True

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {k[5:].replace("_", "-"): v for k, v in environ.items() if k.startswith("HTTP_")}
        status, reply = self.answer(raw, headers)
        body = json.dumps(reply).encode()
        start_response(
            f"{status} X", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    def answer(self, raw: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        try:
            parsed = parse_callback(
                raw_body=raw, headers=headers, secrets=self.secrets, now=datetime.now(UTC), seen_events=self
            )
        except CallbackRejected as rejected:
            return rejected.http_status, rejected.reply()
        if isinstance(parsed, UrlVerification):
            return 200, url_verification_reply(parsed)
        self.actions.append(parsed)
        approval_id, decision = parsed.value.get("approval_id"), parsed.value.get("decision")
        if parsed.operator_open_id != APPROVER:
            return 200, toast_reply("error", "You are not an approver of this request.")
        if self.fake.message_for(str(approval_id)) is None:
            return 200, toast_reply("error", "Unknown approval.")
        with self._lock:
            first = approval_id not in self.decisions
            if first:
                self.decisions[approval_id] = (
                    "approved" if decision == "approve" else "rejected",
                    parsed.event_id,
                )
            outcome = self.decisions[approval_id][0]
        card = approval_decided_card(decision=outcome, decided_by=parsed.operator_open_id, language="en")
        return 200, toast_reply("success" if first else "info", outcome if first else "Already decided", card)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def standin(fake_feishu: FakeFeishu) -> CallbackStandIn:
    return CallbackStandIn(fake_feishu)


@pytest.fixture
def callback_url(standin: CallbackStandIn) -> Iterator[str]:
    server: WSGIServer = make_server("127.0.0.1", 0, standin, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/integrations/feishu/ch/callback/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def api(fake_feishu: FakeFeishu) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake_feishu.base_url, timeout=5) as client:
        yield client


def token_for(api: httpx.Client, fake: FakeFeishu) -> str:
    reply = api.post(
        "/open-apis/auth/v3/tenant_access_token/internal",
        json={"app_id": fake.app.app_id, "app_secret": fake.app.app_secret},
    ).json()
    return reply["tenant_access_token"]


def pending_card(approval_id: str = "ap-1") -> dict[str, Any]:
    return approval_pending_card(
        approval_id=approval_id,
        agent_name="Finance bot",
        user_name="Mia",
        tool_name="erp__create_payment",
        arguments={"amount": 60000},
        policy_name="Payments over 50k",
        expires_at=datetime(2025, 3, 1, 12, 10, tzinfo=UTC),
        language="en",
    )


def post_message(
    api: httpx.Client, token: str | None, body: dict[str, Any], receive_id_type: str = "chat_id"
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return api.post(MESSAGES, params={"receive_id_type": receive_id_type}, json=body, headers=headers)


def message_body(card: Any = None, uuid: str | None = "ap-1", **overrides: Any) -> dict[str, Any]:
    content = json.dumps(pending_card() if card is None else card) if not isinstance(card, str) else card
    body = {"receive_id": "oc_finance", "msg_type": "interactive", "content": content, "uuid": uuid}
    body.update(overrides)
    return body


def send_pending(api: httpx.Client, fake: FakeFeishu, approval_id: str = "ap-1") -> str:
    reply = post_message(api, token_for(api, fake), message_body(pending_card(approval_id), uuid=approval_id))
    return reply.json()["data"]["message_id"]


# --- tokens -------------------------------------------------------------------------------------


def test_token_endpoint_refuses_wrong_credentials(api, fake_feishu):
    reply = api.post(
        "/open-apis/auth/v3/tenant_access_token/internal",
        json={"app_id": fake_feishu.app.app_id, "app_secret": "x"},
    )
    assert reply.json()["code"] != 0 and "tenant_access_token" not in reply.json()


def test_token_endpoint_returns_the_same_token_while_it_is_fresh(api, fake_feishu):
    first = api.post(
        "/open-apis/auth/v3/tenant_access_token/internal",
        json={"app_id": fake_feishu.app.app_id, "app_secret": fake_feishu.app.app_secret},
    ).json()
    assert first["code"] == 0 and first["expire"] == 7200 and first["tenant_access_token"].startswith("t-")
    assert token_for(api, fake_feishu) == first["tenant_access_token"]


def test_expired_token_is_refused_and_a_new_one_is_issued(api, fake_feishu):
    old = token_for(api, fake_feishu)
    fake_feishu.expire_tokens()
    assert post_message(api, old, message_body()).json()["code"] == 99991663
    new = token_for(api, fake_feishu)
    assert new != old and post_message(api, new, message_body()).json()["code"] == 0


# --- sending: Feishu's validation ---------------------------------------------------------------


def _dup_names() -> dict[str, Any]:
    card = pending_card()
    for element in card["body"]["elements"]:
        if element["tag"] == "column_set":
            for column in element["columns"]:
                column["elements"][0]["name"] = "same"
    return card


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (message_body(content={"schema": "2.0"}), 400, 230001),
        (message_body(card="not json"), 400, 230001),
        (message_body(card={**pending_card(), "schema": "1.0"}), 400, 230099),
        (message_body(card={**pending_card(), "colour": "red"}), 400, 230099),
        (message_body(card=_dup_names()), 400, 230099),
        (
            message_body(
                card={"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "x" * 31000}]}}
            ),
            400,
            230025,
        ),
        (message_body(msg_type="text"), 400, 99992402),
        (message_body(uuid="u" * 51), 400, 99992402),
    ],
    ids=[
        "content-not-string",
        "content-not-json",
        "schema-1",
        "unknown-property",
        "duplicate-button-names",
        "over-30kb",
        "not-interactive",
        "uuid-too-long",
    ],
)
def test_send_validates_like_feishu(api, fake_feishu, body, status, code):
    reply = post_message(api, token_for(api, fake_feishu), body)
    assert (reply.status_code, reply.json()["code"]) == (status, code)
    assert fake_feishu.sent == []


@pytest.mark.parametrize(("authorization", "code"), [(None, 99991661), ("t-made-up", 99991663)])
def test_send_requires_a_valid_bearer_token(api, fake_feishu, authorization, code):
    reply = post_message(api, authorization, message_body())
    assert (reply.status_code, reply.json()["code"]) == (400, code)


def test_send_refuses_unknown_receive_id_types(api, fake_feishu):
    reply = post_message(api, token_for(api, fake_feishu), message_body(), receive_id_type="group")
    assert reply.json()["code"] == 99992402


def test_same_uuid_returns_the_first_message_and_posts_nothing(api, fake_feishu):
    token = token_for(api, fake_feishu)
    first = post_message(api, token, message_body(uuid="ap-1")).json()["data"]["message_id"]
    again = post_message(api, token, message_body(uuid="ap-1")).json()["data"]["message_id"]
    other = post_message(api, token, message_body(uuid="ap-2")).json()["data"]["message_id"]
    assert first == again != other
    assert [m.message_id for m in fake_feishu.sent] == [first, other]


def test_patch_replaces_a_card_only_when_both_allow_shared_updates(api, fake_feishu):
    token = token_for(api, fake_feishu)
    message_id = send_pending(api, fake_feishu)
    headers = {"Authorization": f"Bearer {token}"}
    single = {**approval_decided_card(decision="expired", language="en"), "config": {}}
    assert (
        api.patch(f"{MESSAGES}/{message_id}", json={"content": json.dumps(single)}, headers=headers).json()[
            "code"
        ]
        == 230099
    )
    decided = approval_decided_card(decision="expired", language="en")
    assert (
        api.patch(f"{MESSAGES}/{message_id}", json={"content": json.dumps(decided)}, headers=headers).json()[
            "code"
        ]
        == 0
    )
    assert (
        api.patch(f"{MESSAGES}/om_nope", json={"content": json.dumps(decided)}, headers=headers).json()[
            "code"
        ]
        != 0
    )
    assert fake_feishu.messages[message_id].card == decided
    assert [u.kind for u in fake_feishu.updates] == ["patch"]


# --- fault switches -----------------------------------------------------------------------------


def test_rate_limit_switch_answers_429_with_the_reset_header_then_recovers(api, fake_feishu):
    token = token_for(api, fake_feishu)
    fake_feishu.rate_limit(times=2, reset=3)
    for _ in range(2):
        reply = post_message(api, token, message_body())
        assert (reply.status_code, reply.json()["code"], reply.headers["x-ogw-ratelimit-reset"]) == (
            429,
            99991400,
            "3",
        )
    assert post_message(api, token, message_body()).json()["code"] == 0


def test_fail_switches_answer_the_given_status_and_code_once(api, fake_feishu):
    token = token_for(api, fake_feishu)
    fake_feishu.fail(status=502)
    fake_feishu.fail_with(230002, status=400)
    assert post_message(api, token, message_body()).status_code == 502
    assert post_message(api, token, message_body()).json()["code"] == 230002
    assert post_message(api, token, message_body()).json()["code"] == 0


def test_revoked_tokens_are_refused(api, fake_feishu):
    token = token_for(api, fake_feishu)
    fake_feishu.revoke_tokens()
    assert post_message(api, token, message_body()).json()["code"] == 99991663


def test_latency_switch_delays_answers(fake_feishu):
    fake_feishu.latency = 1.0
    with (
        httpx.Client(base_url=fake_feishu.base_url, timeout=0.1) as slow,
        pytest.raises(httpx.TimeoutException),
    ):
        token_for(slow, fake_feishu)


def test_bot_removed_from_a_chat_cannot_post_there(api, fake_feishu):
    fake_feishu.remove_bot_from_chat("oc_finance")
    assert post_message(api, token_for(api, fake_feishu), message_body()).json()["code"] == 230002


def test_reset_forgets_messages_faults_and_tokens(api, fake_feishu):
    token = token_for(api, fake_feishu)
    send_pending(api, fake_feishu)
    fake_feishu.fail(times=3)
    fake_feishu.reset()
    assert fake_feishu.sent == [] and fake_feishu.messages == {}
    assert post_message(api, token, message_body()).json()["code"] == 99991663
    assert post_message(api, token_for(api, fake_feishu), message_body()).json()["code"] == 0


# --- clicks -------------------------------------------------------------------------------------


def test_click_posts_a_signed_encrypted_action_and_applies_the_returned_card(
    api, fake_feishu, standin, callback_url
):
    message_id = send_pending(api, fake_feishu, "ap-1")
    status, reply = fake_feishu.click(
        callback_url, approval_id="ap-1", decision="approve", operator_open_id=APPROVER
    )
    assert status == 200 and reply["toast"] == {"type": "success", "content": "approved"}
    (action,) = standin.actions
    assert action.value == {"approval_id": "ap-1", "decision": "approve"}
    assert (action.operator_open_id, action.open_message_id, action.action_name) == (
        APPROVER,
        message_id,
        "approve",
    )
    assert action.update_token and action.update_token.startswith("c-")
    assert fake_feishu.messages[message_id].card == reply["card"]["data"]
    assert [(u.message_id, u.kind) for u in fake_feishu.updates] == [(message_id, "callback")]
    assert fake_feishu.clicks[-1].status == 200


def test_reject_click_by_message_id(api, fake_feishu, standin, callback_url):
    message_id = send_pending(api, fake_feishu, "ap-1")
    fake_feishu.click(callback_url, message_id=message_id, decision="reject", operator_open_id=APPROVER)
    assert standin.decisions["ap-1"][0] == "rejected"


@pytest.mark.parametrize(
    ("knob", "status", "reason_toast"),
    [
        ({"bad_signature": True}, 401, "could not be verified"),
        ({"unsigned": True}, 401, "could not be verified"),
        ({"wrong_token": True}, 403, "not for this app"),
        ({"stale": True}, 408, "expired"),
    ],
)
def test_negative_knobs_are_refused_with_an_error_toast(
    api, fake_feishu, standin, callback_url, knob, status, reason_toast
):
    message_id = send_pending(api, fake_feishu)
    got, reply = fake_feishu.click(callback_url, approval_id="ap-1", operator_open_id=APPROVER, **knob)
    assert got == status
    assert reply["toast"]["type"] == "error" and reason_toast in reply["toast"]["content"]
    assert standin.decisions == {} and fake_feishu.messages[message_id].card == pending_card()


def test_replayed_click_resends_the_same_bytes_and_is_refused(api, fake_feishu, standin, callback_url):
    send_pending(api, fake_feishu)
    fake_feishu.click(callback_url, approval_id="ap-1", operator_open_id=APPROVER)
    status, reply = fake_feishu.click(callback_url, replay=True, operator_open_id=APPROVER)
    assert status == 409 and reply["toast"]["type"] == "error"
    assert len(standin.actions) == 1


def test_click_for_an_unknown_approval_carries_that_id(api, fake_feishu, standin, callback_url):
    send_pending(api, fake_feishu, "ap-1")
    status, reply = fake_feishu.click(callback_url, approval_id="ap-unknown", operator_open_id=APPROVER)
    assert (status, reply["toast"]["content"]) == (200, "Unknown approval.")
    assert standin.actions[0].value == {"approval_id": "ap-unknown", "decision": "approve"}


def test_click_by_someone_who_is_not_an_approver(api, fake_feishu, standin, callback_url):
    message_id = send_pending(api, fake_feishu)
    status, reply = fake_feishu.click(callback_url, approval_id="ap-1", operator_open_id="ou_mallory")
    assert status == 200 and reply["toast"]["type"] == "error" and "card" not in reply
    assert standin.decisions == {} and fake_feishu.messages[message_id].card == pending_card()


def test_double_click_sends_two_event_ids_from_the_old_card(api, fake_feishu, standin, callback_url):
    send_pending(api, fake_feishu)
    first = fake_feishu.click(callback_url, approval_id="ap-1", operator_open_id=APPROVER)
    second = fake_feishu.click(callback_url, approval_id="ap-1", decision="reject", operator_open_id=APPROVER)
    assert first[1]["toast"]["type"] == "success" and second[1]["toast"] == {
        "type": "info",
        "content": "Already decided",
    }
    assert len({a.event_id for a in standin.actions}) == 2
    assert standin.decisions["ap-1"][0] == "approved"


async def test_async_click_reaches_the_callback(api, fake_feishu, standin, callback_url):
    send_pending(api, fake_feishu)
    status, reply = await fake_feishu.aclick(callback_url, approval_id="ap-1", operator_open_id=APPROVER)
    assert status == 200 and reply["toast"]["type"] == "success"


def test_click_through_an_in_process_wsgi_transport(api, fake_feishu, standin):
    send_pending(api, fake_feishu)
    with httpx.Client(transport=httpx.WSGITransport(app=standin), base_url="http://callback") as client:
        status, _ = fake_feishu.click(
            "http://callback/cb/", client=client, approval_id="ap-1", operator_open_id=APPROVER
        )
    assert status == 200 and standin.decisions["ap-1"][0] == "approved"


def test_built_click_passes_our_parser_with_the_fakes_default_secrets(api, fake_feishu):
    send_pending(api, fake_feishu)
    request = fake_feishu.build_click(approval_id="ap-1", operator_open_id=APPROVER)
    secrets = CallbackSecrets(
        verification_token=FAKE_VERIFICATION_TOKEN,
        encrypt_key=FAKE_ENCRYPT_KEY,
        app_id=fake_feishu.app.app_id,
    )
    action = parse_callback(
        raw_body=request.body, headers=request.headers, secrets=secrets, now=datetime.now(UTC)
    )
    assert action.event_id == request.event_id and json.loads(request.body).keys() == {"encrypt"}


def test_click_on_a_button_the_card_never_had_fails_the_test(api, fake_feishu):
    send_pending(api, fake_feishu)
    with pytest.raises(AssertionError, match="never had"):
        fake_feishu.build_click(approval_id="ap-1", decision="escalate", operator_open_id=APPROVER)
    with pytest.raises(AssertionError, match="no click"):
        fake_feishu.build_click(replay=True, operator_open_id=APPROVER)


def test_a_late_answer_or_an_unusable_card_fails_the_test(fake_feishu):
    request = CallbackRequest(body=b"{}", headers={}, event_id="ev", message_id=None)
    with pytest.raises(AssertionError, match="after 3.50s"):
        fake_feishu.receive_reply(request, 200, b'{"toast": {"type": "info", "content": "x"}}', elapsed=3.5)
    bad = json.dumps({"card": {"type": "raw", "data": {"schema": "1.0"}}}).encode()
    with pytest.raises(AssertionError, match="invalid card"):
        fake_feishu.receive_reply(request, 200, bad)


# --- URL verification ---------------------------------------------------------------------------


@pytest.mark.parametrize("encrypt_key", [None, FAKE_ENCRYPT_KEY], ids=["plain", "encrypted"])
def test_verify_url_gets_its_challenge_back(fake_feishu, callback_url, encrypt_key):
    status, reply = fake_feishu.verify_url(callback_url, challenge="ch-1", encrypt_key=encrypt_key)
    assert (status, reply) == (200, {"challenge": "ch-1"})


def test_verify_url_with_a_wrong_token_is_refused(fake_feishu, callback_url):
    status, reply = fake_feishu.verify_url(callback_url, wrong_token=True)
    assert status == 403 and reply["toast"]["type"] == "error"


# --- card checks --------------------------------------------------------------------------------


def test_card_checks_accept_our_cards_and_name_each_problem():
    assert validate_card(pending_card()) == []
    card = pending_card()
    card["header"]["template"] = "pink"
    card["body"]["elements"].append({"tag": "img", "img_key": "x"})
    problems = validate_card(card)
    assert any("pink" in p for p in problems) and any("img" in p for p in problems)
