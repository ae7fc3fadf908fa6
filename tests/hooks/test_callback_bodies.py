"""Hostile bodies to the Feishu callback (deeply nested, oversized, not an object, garbage), signed or
not, encrypted or not, answer a clear 4xx with an error toast, never a 500. Extend the corpus freely."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from hooks.feishu.callback import MAX_CALLBACK_BYTES, encrypt_payload, sign
from tests.fakes.feishu_server import FAKE_ENCRYPT_KEY
from tests.hooks.factories import FeishuChannelFactory

pytestmark = pytest.mark.django_db

DEEP = 100_000

CORPUS: dict[str, bytes] = {
    "nested arrays": b"[" * DEEP + b"]" * DEEP,
    "nested objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "nested in a valid prefix": b'{"schema": "2.0", "header": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    "10 MB object": b'{"pad": "' + b"x" * (10 * 1024 * 1024) + b'"}',
    "10 MB of garbage": b"\x00" * (10 * 1024 * 1024),
    "a JSON array": b"[]",
    "a JSON string": b'"hello"',
    "a JSON number": b"1e999999",
    "null": b"null",
    "empty": b"",
    "not JSON": b"not json at all",
    "invalid UTF-8": b'{"encrypt": "\xff\xfe"}',
    "NaN": b'{"type": NaN}',
    "encrypt is an object": b'{"encrypt": {"a": 1}}',
    "encrypt is nested": b'{"encrypt": ' + b"[" * DEEP + b"]" * DEEP + b"}",
}


def _encrypted(plaintext: bytes) -> bytes:
    return json.dumps({"encrypt": encrypt_payload(plaintext, FAKE_ENCRYPT_KEY)}).encode()


ENCRYPTED_CORPUS: dict[str, bytes] = {
    "encrypted nested arrays": _encrypted(b"[" * DEEP + b"]" * DEEP),
    "encrypted nested objects": _encrypted(b'{"a":' * DEEP + b"1" + b"}" * DEEP),
    "encrypted array": _encrypted(b"[1, 2]"),
    "encrypted garbage": _encrypted(b"\xff\xfe\xfd"),
    "encrypted nested action value": _encrypted(
        json.dumps(
            {
                "schema": "2.0",
                "header": {"event_id": "e1", "event_type": "card.action.trigger", "token": "x"},
                "event": {
                    "operator": {"open_id": "ou_boss"},
                    "action": {"value": "[" * DEEP + "]" * DEEP},
                },
            }
        ).encode()
    ),
}


@pytest.fixture
def wsgi():
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        with httpx.Client(
            transport=httpx.WSGITransport(app=WSGIHandler()), base_url="http://testserver", timeout=30
        ) as client:
            yield client
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def callback_url(org):
    channel = FeishuChannelFactory(organization=org)
    return f"/integrations/feishu/{channel.pk}/callback/"


def _signed_headers(body: bytes) -> dict[str, str]:
    timestamp, nonce = str(int(time.time())), "nonce-1"
    return {
        "Content-Type": "application/json",
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": sign(
            timestamp=timestamp, nonce=nonce, encrypt_key=FAKE_ENCRYPT_KEY, raw_body=body
        ),
    }


def _assert_clear_error(response: httpx.Response) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:200])
    body = response.json()
    assert body["toast"]["type"] == "error" and body["toast"]["content"]


@pytest.mark.parametrize("name", list(CORPUS))
def test_an_unsigned_hostile_body_answers_a_clear_error_with_a_toast(wsgi, callback_url, name):
    _assert_clear_error(
        wsgi.post(callback_url, content=CORPUS[name], headers={"Content-Type": "application/json"})
    )


@pytest.mark.parametrize("name", list(CORPUS) + list(ENCRYPTED_CORPUS))
def test_a_signed_hostile_body_answers_a_clear_error_with_a_toast(wsgi, callback_url, name):
    body = CORPUS[name] if name in CORPUS else ENCRYPTED_CORPUS[name]
    _assert_clear_error(wsgi.post(callback_url, content=body, headers=_signed_headers(body)))


def test_a_body_over_the_limit_is_refused_as_too_large_before_it_is_read(wsgi, callback_url):
    body = b" " * (MAX_CALLBACK_BYTES + 1)
    response = wsgi.post(callback_url, content=body, headers=_signed_headers(body))
    assert response.status_code == 413 and response.json()["toast"]["type"] == "error"
