"""Issue #31: a connector secret echoed back encoded (base64, URL, hex, another case, reversed) is scrubbed
like the secret itself, wherever it sits inside a longer text or a longer base64 token."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import quote, quote_plus

import pytest

from connectors.redaction import redact, redact_values
from connectors.scrub import REDACTED, scrub

SECRET = "sk-erp/Live+7f3a9c2e41?x"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


ENCODINGS = {
    "exact": SECRET,
    "upper": SECRET.upper(),
    "lower": SECRET.lower(),
    "reversed": SECRET[::-1],
    "reversed upper": SECRET[::-1].upper(),
    "url": quote(SECRET, safe=""),
    "url lower-case escapes": quote(SECRET, safe="").lower(),
    "url plus": quote_plus(SECRET),
    "double url": quote(quote(SECRET, safe=""), safe=""),
    "hex": SECRET.encode().hex(),
    "hex upper": SECRET.encode().hex().upper(),
    "base64": _b64(SECRET.encode()),
    "base64 no padding": _b64(SECRET.encode()).rstrip("="),
    "base64 url-safe": _b64url(SECRET.encode()),
    "base64 url-safe no padding": _b64url(SECRET.encode()).rstrip("="),
    "base64 of the upper-case": _b64(SECRET.upper().encode()),
    "base64 of the reversed": _b64(SECRET[::-1].encode()),
    "basic auth user:secret": _b64(f"admin:{SECRET}".encode()),
    "base64 at offset 1": _b64(b"a" + SECRET.encode() + b"tail"),
    "base64 at offset 2": _b64(b"ab" + SECRET.encode() + b"t"),
    "base64 at offset 3 url-safe": _b64url(b"abc" + SECRET.encode()).rstrip("="),
    "base64 in json": _b64(b'{"key": "' + SECRET.encode() + b'"}'),
}


@pytest.mark.parametrize("name", ENCODINGS)
def test_an_encoded_secret_inside_text_is_scrubbed(name):
    encoded = ENCODINGS[name]
    text = f'{{"echo": "{encoded}", "note": "see {encoded} again"}}'

    scrubbed = scrub(text, [SECRET])

    assert encoded not in scrubbed
    assert scrubbed.count(REDACTED) == 2
    assert '"note": "see ' in scrubbed and " again" in scrubbed


@pytest.mark.parametrize("name", ENCODINGS)
def test_no_secret_bits_survive_around_a_scrubbed_base64_token(name):
    encoded = ENCODINGS[name]
    scrubbed = scrub(f"Authorization: Basic {encoded}\n", [SECRET])
    # the whole base64 token goes, not only the characters that depend on the secret alone
    assert scrubbed == f"Authorization: Basic {REDACTED}\n"


def test_encoded_secrets_are_redacted_from_structured_values():
    value = {"data": [{"b64": _b64(SECRET.encode()), "hex": binascii.hexlify(SECRET.encode()).decode()}]}
    assert redact_values(value, [SECRET]) == {"data": [{"b64": REDACTED, "hex": REDACTED}]}
    assert redact({"echo": quote(SECRET, safe="").lower()}, [SECRET]) == {"echo": REDACTED}


def test_ordinary_text_and_other_base64_are_left_alone():
    other = _b64(b"admin:another-password-entirely")
    text = f"Order SO-1002 paid, token {other}, id 7f3a9c2e, SK-ERP is a prefix"
    assert scrub(text, [SECRET]) == text


def test_short_secrets_are_still_ignored():
    assert scrub("abc YWJj abc", ["abc"]) == "abc YWJj abc"


def test_an_encoded_secret_without_spaces_around_it_is_found_in_any_script():
    encoded = _b64url(b"x" + SECRET.encode()).rstrip("=")
    text = f"密钥是{encoded}，请保管"

    assert scrub(text, [SECRET]) == f"密钥是{REDACTED}，请保管"
