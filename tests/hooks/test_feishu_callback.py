"""Feishu card callbacks: signature, decryption, URL verification and every rejection (FEISHU.md section 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.feishu.callback import (
    CallbackRejected,
    CallbackSecrets,
    CardAction,
    UrlVerification,
    decrypt_payload,
    encrypt_payload,
    parse_callback,
    replay_rejected,
    sign,
    toast_reply,
    url_verification_reply,
    verify_signature,
)

ENCRYPT_KEY = "encrypt-key-under-test"
TOKEN = "verification-token-under-test"
SECRETS = CallbackSecrets(verification_token=TOKEN, encrypt_key=ENCRYPT_KEY)
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def click_payload(**header_overrides: Any) -> dict[str, Any]:
    header = {
        "event_id": "ev_1",
        "token": TOKEN,
        "create_time": "1740830400000000",
        "event_type": "card.action.trigger",
        "tenant_key": "tk",
        "app_id": "cli_app",
    }
    header.update(header_overrides)
    return {
        "schema": "2.0",
        "header": {k: v for k, v in header.items() if v is not None},
        "event": {
            "operator": {"tenant_key": "tk", "open_id": "ou_alice", "union_id": "on_alice", "user_id": "u1"},
            "token": "c-update-token",
            "action": {
                "value": {"approval_id": "ap_1", "decision": "approve"},
                "tag": "button",
                "name": "approve",
            },
            "host": "im_message",
            "context": {"open_message_id": "om_1", "open_chat_id": "oc_1"},
        },
    }


def request(
    payload: dict[str, Any] | bytes,
    *,
    key: str = ENCRYPT_KEY,
    sign_with: str | None = None,
    sent_at: datetime = NOW,
    encrypted: bool = True,
    signed: bool = True,
) -> tuple[bytes, dict[str, str]]:
    plain = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    body = json.dumps({"encrypt": encrypt_payload(plain, key)}).encode() if encrypted else plain
    headers = {"Content-Type": "application/json"}
    if signed:
        timestamp, nonce = str(int(sent_at.timestamp())), "nonce-1"
        headers |= {
            "X-Lark-Request-Timestamp": timestamp,
            "X-Lark-Request-Nonce": nonce,
            "X-Lark-Signature": sign(
                timestamp=timestamp, nonce=nonce, encrypt_key=sign_with or key, raw_body=body
            ),
        }
    return body, headers


def parse(body: bytes, headers: dict[str, str], **kwargs: Any) -> CardAction | UrlVerification:
    return parse_callback(
        raw_body=body, headers=headers, secrets=kwargs.pop("secrets", SECRETS), now=NOW, **kwargs
    )


def rejected(body: bytes, headers: dict[str, str], **kwargs: Any) -> CallbackRejected:
    with pytest.raises(CallbackRejected) as caught:
        parse(body, headers, **kwargs)
    return caught.value


class MemorySeenEvents:
    def __init__(self) -> None:
        self.ids: set[str] = set()

    def add_if_absent(self, event_id: str) -> bool:
        if event_id in self.ids:
            return False
        self.ids.add(event_id)
        return True


# --- decryption and signature -------------------------------------------------------------------


def test_decrypts_feishus_documented_test_vector():
    assert decrypt_payload("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key") == b"hello world"


def test_encrypted_payload_round_trips_with_a_fresh_iv_each_time():
    first, second = encrypt_payload(b"{}", "k"), encrypt_payload(b"{}", "k")
    assert first != second
    assert decrypt_payload(first, "k") == decrypt_payload(second, "k") == b"{}"


@pytest.mark.parametrize(
    "encrypt",
    ["not base64 at all!", "AAAA", encrypt_payload(b"secret payload", "other key")],
    ids=["not-base64", "too-short", "another-key"],  # the encryption's IV is random: so would an id be
)
def test_decryption_refuses_garbage_short_input_and_the_wrong_key(encrypt):
    with pytest.raises(ValueError):
        decrypt_payload(encrypt, ENCRYPT_KEY)


def test_signature_covers_the_exact_request_bytes():
    body = b'{"encrypt": "abc"}'
    signature = sign(timestamp="1700000000", nonce="n", encrypt_key=ENCRYPT_KEY, raw_body=body)
    assert verify_signature(
        timestamp="1700000000", nonce="n", encrypt_key=ENCRYPT_KEY, raw_body=body, signature=signature
    )
    reserialised = json.dumps(json.loads(body), separators=(",", ":")).encode()
    assert not verify_signature(
        timestamp="1700000000", nonce="n", encrypt_key=ENCRYPT_KEY, raw_body=reserialised, signature=signature
    )
    assert not verify_signature(
        timestamp="1700000001", nonce="n", encrypt_key=ENCRYPT_KEY, raw_body=body, signature=signature
    )


def test_signature_is_sha256_of_timestamp_nonce_key_then_body():
    import hashlib

    expected = hashlib.sha256(b"1700000000" + b"n" + ENCRYPT_KEY.encode() + b"{}").hexdigest()
    assert verify_signature(
        timestamp="1700000000", nonce="n", encrypt_key=ENCRYPT_KEY, raw_body=b"{}", signature=expected
    )


# --- a valid click ------------------------------------------------------------------------------


def test_valid_signed_encrypted_click_is_parsed_into_a_card_action():
    action = parse(*request(click_payload()))
    assert action == CardAction(
        event_id="ev_1",
        operator_open_id="ou_alice",
        operator_union_id="on_alice",
        operator_user_id="u1",
        value={"approval_id": "ap_1", "decision": "approve"},
        action_name="approve",
        open_message_id="om_1",
        open_chat_id="oc_1",
        update_token="c-update-token",
        create_time=datetime(2025, 3, 1, 12, 0, tzinfo=UTC),
        tenant_key="tk",
        app_id="cli_app",
    )
    assert "c-update-token" not in repr(action)


def test_header_names_are_matched_case_insensitively():
    body, headers = request(click_payload())
    assert isinstance(parse(body, {k.lower(): v for k, v in headers.items()}), CardAction)


def test_click_without_header_token_is_accepted_on_its_signature():
    assert isinstance(parse(*request(click_payload(token=None))), CardAction)


def test_signed_plain_click_is_accepted():
    assert isinstance(parse(*request(click_payload(), encrypted=False)), CardAction)


def test_button_value_sent_as_a_json_string_is_decoded():
    payload = click_payload()
    payload["event"]["action"]["value"] = json.dumps({"approval_id": "ap_1", "decision": "reject"})
    assert parse(*request(payload)).value == {"approval_id": "ap_1", "decision": "reject"}


def test_timestamp_within_five_minutes_either_way_is_accepted():
    for offset in (timedelta(minutes=-4, seconds=-59), timedelta(minutes=4, seconds=59)):
        assert isinstance(parse(*request(click_payload(), sent_at=NOW + offset)), CardAction)


# --- URL verification ---------------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [False, True])
def test_unsigned_url_verification_is_answered_with_its_challenge(encrypted):
    payload = {"type": "url_verification", "challenge": "ch-42", "token": TOKEN}
    verification = parse(*request(payload, encrypted=encrypted, signed=False))
    assert verification == UrlVerification(challenge="ch-42")
    assert url_verification_reply(verification) == {"challenge": "ch-42"}


def test_url_verification_with_a_wrong_token_is_refused():
    payload = {"type": "url_verification", "challenge": "ch-42", "token": "guess"}
    error = rejected(*request(payload, encrypted=False, signed=False))
    assert (error.reason, error.http_status) == ("wrong_token", 403)


def test_url_verification_without_a_challenge_is_malformed():
    error = rejected(*request({"type": "url_verification", "token": TOKEN}, encrypted=False, signed=False))
    assert (error.reason, error.http_status) == ("malformed", 400)


# --- every rejection, in the handler order ------------------------------------------------------


def test_bad_signature_is_refused_with_401_before_decryption():
    body, headers = request(b"this is not even json", encrypted=False, sign_with="not-the-key")
    error = rejected(body, headers)
    assert (error.reason, error.http_status) == ("bad_signature", 401)


def test_unsigned_click_is_refused_with_401():
    error = rejected(*request(click_payload(), signed=False))
    assert (error.reason, error.http_status) == ("bad_signature", 401)


def test_body_encrypted_with_another_key_is_refused_with_400():
    plain = json.dumps(click_payload()).encode()
    body = json.dumps({"encrypt": encrypt_payload(plain, "another key")}).encode()
    body, headers = request(body, encrypted=False)  # correctly signed, wrongly encrypted
    error = rejected(body, headers)
    assert (error.reason, error.http_status) == ("malformed", 400)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"encrypt": 42}',
        json.dumps({"encrypt": encrypt_payload(b"not json", ENCRYPT_KEY)}).encode(),
    ],
    ids=["not-json", "not-an-object", "encrypt-not-a-string", "plaintext-not-json"],
)
def test_undecodable_bodies_are_refused_with_400(body):
    error = rejected(*request(body, encrypted=False))
    assert (error.reason, error.http_status) == ("malformed", 400)


def test_wrong_verification_token_is_refused_with_403():
    error = rejected(*request(click_payload(token="forged")))
    assert (error.reason, error.http_status) == ("wrong_token", 403)


def test_event_for_another_app_is_refused_when_the_app_id_is_known():
    secrets = CallbackSecrets(verification_token=TOKEN, encrypt_key=ENCRYPT_KEY, app_id="cli_other")
    error = rejected(*request(click_payload()), secrets=secrets)
    assert (error.reason, error.http_status) == ("wrong_token", 403)


@pytest.mark.parametrize("offset", [timedelta(minutes=-5, seconds=-1), timedelta(minutes=6)])
def test_stale_or_future_timestamp_is_refused(offset):
    error = rejected(*request(click_payload(), sent_at=NOW + offset))
    assert (error.reason, error.http_status) == ("stale", 408)


def test_missing_timestamp_is_malformed():
    body, headers = request(click_payload())
    headers["X-Lark-Request-Timestamp"] = ""
    headers["X-Lark-Signature"] = sign(timestamp="", nonce="nonce-1", encrypt_key=ENCRYPT_KEY, raw_body=body)
    assert rejected(body, headers).reason == "malformed"


def test_replayed_event_id_is_refused_with_409():
    seen = MemorySeenEvents()
    body, headers = request(click_payload())
    assert isinstance(parse(body, headers, seen_events=seen), CardAction)
    error = rejected(body, headers, seen_events=seen)
    assert (error.reason, error.http_status) == ("replay", 409)


def test_double_click_has_two_event_ids_and_both_pass_the_replay_check():
    seen = MemorySeenEvents()
    first = parse(*request(click_payload(event_id="ev_a")), seen_events=seen)
    second = parse(*request(click_payload(event_id="ev_b")), seen_events=seen)
    assert first.value == second.value and first.event_id != second.event_id


def test_rejected_event_is_not_recorded_as_seen():
    seen = MemorySeenEvents()
    rejected(*request(click_payload(), sent_at=NOW - timedelta(hours=1)), seen_events=seen)
    assert seen.ids == set()
    assert isinstance(parse(*request(click_payload()), seen_events=seen), CardAction)


def test_replay_rejected_helper_matches_the_built_in_check():
    error = replay_rejected("ev_1")
    assert (error.reason, error.http_status) == ("replay", 409)
    assert error.reply()["toast"]["type"] == "error"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.update(schema="1.0"),
        lambda p: p["header"].update(event_type="im.message.receive_v1"),
        lambda p: p.pop("event"),
    ],
    ids=["schema-1", "other-event-type", "no-event"],
)
def test_callbacks_other_than_card_action_trigger_2_0_are_unsupported(mutate):
    payload = click_payload()
    mutate(payload)
    error = rejected(*request(payload))
    assert (error.reason, error.http_status) == ("unsupported", 400)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p["header"].pop("event_id"),
        lambda p: p["event"]["operator"].pop("open_id"),
        lambda p: p["event"].pop("action"),
        lambda p: p["event"]["action"].update(value="not an object"),
    ],
    ids=["no-event-id", "no-operator", "no-action", "value-not-object"],
)
def test_click_missing_required_fields_is_malformed(mutate):
    payload = click_payload()
    mutate(payload)
    error = rejected(*request(payload))
    assert (error.reason, error.http_status) == ("malformed", 400)


@pytest.mark.parametrize("secrets", [CallbackSecrets("", ENCRYPT_KEY), CallbackSecrets(TOKEN, "")])
def test_channel_without_both_secrets_refuses_every_callback(secrets):
    error = rejected(*request(click_payload()), secrets=secrets)
    assert (error.reason, error.http_status) == ("not_configured", 503)


# --- replies ------------------------------------------------------------------------------------


def test_every_rejection_answers_an_error_toast_in_the_callers_language():
    body, headers = request(click_payload(token="forged"))
    english = rejected(body, headers)
    chinese = rejected(body, headers, language="zh-hans")
    assert english.reply() == {"toast": {"type": "error", "content": "This request is not for this app."}}
    assert chinese.reply()["toast"] == {"type": "error", "content": "此请求不属于本应用。"}


def test_rejections_never_reveal_the_secrets():
    cases = [
        request(click_payload(), sign_with="x"),
        request(click_payload(token="forged")),
        request(click_payload(), sent_at=NOW - timedelta(days=1)),
        request(b"garbage"),
    ]
    for body, headers in cases:
        error = rejected(body, headers)
        for text in (str(error), repr(error), json.dumps(error.reply())):
            assert ENCRYPT_KEY not in text and TOKEN not in text
    assert ENCRYPT_KEY not in repr(SECRETS) and TOKEN not in repr(SECRETS)


def test_toast_reply_replaces_the_card_with_a_raw_card():
    card = {"schema": "2.0", "body": {"elements": []}}
    assert toast_reply("success", "Approved", card) == {
        "toast": {"type": "success", "content": "Approved"},
        "card": {"type": "raw", "data": card},
    }
    assert toast_reply("info", "Already decided") == {"toast": {"type": "info", "content": "Already decided"}}


def test_toast_reply_refuses_unknown_kinds():
    with pytest.raises(ValueError):
        toast_reply("fatal", "x")  # type: ignore[arg-type]
