"""The HTTP adapter against a real loopback service: requests, auth, limits, retries, circuit breaker."""

from __future__ import annotations

import base64
import json
import logging
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from connectors import circuit
from connectors.adapter_types import (
    CallOutcome,
    ConnectionFailed,
    ConnectionUnconfirmed,
    ConnectionWorks,
    HttpActionSpec,
    HttpAuth,
    HttpConnectorConfig,
)
from connectors.http import auth as http_auth
from connectors.http.adapter import aclose_http_clients, http_call, http_test_connection
from connectors.http.request import PreparedRequest, with_header
from tests.fakes.http_service import LoopbackHTTPService, Scripted, running_http_service

API_KEY = "key-" + uuid.uuid4().hex
TOKEN = "bearer-" + uuid.uuid4().hex
PASSWORD = "pw-" + uuid.uuid4().hex


@pytest.fixture
def service() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as svc:
        yield svc


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    await aclose_http_clients()


def make(service: LoopbackHTTPService, path: str = "", **overrides: Any) -> HttpConnectorConfig:
    values: dict[str, Any] = {
        "connector_id": f"http-{uuid.uuid4()}",
        "base_url": service.base_url + path,
        "allowed_private_hosts": ("127.0.0.1",),
        "retry_backoff_seconds": 0,
    }
    values.update(overrides)
    return HttpConnectorConfig(**values)


def action(method: str = "GET", path: str = "/echo", **locations: str) -> HttpActionSpec:
    return HttpActionSpec(name="act", method=method, path_template=path, param_locations=locations)


def echoed(outcome: CallOutcome) -> dict[str, Any]:
    assert outcome.status == "ok", outcome.error
    return json.loads(outcome.content)


def oauth(service: LoopbackHTTPService, **overrides: Any) -> HttpAuth:
    values = {
        "type": "oauth2_client_credentials",
        "client_id": service.oauth_client_id,
        "client_secret": service.oauth_client_secret,
        "token_url": "/oauth/token",
    }
    values.update(overrides)
    return HttpAuth(**values)


# --- building the request ---------------------------------------------------------------------------------


async def test_path_parameters_are_substituted_and_url_encoded(service: LoopbackHTTPService) -> None:
    spec = action(path="/orders/{order_id}/lines/{line}", order_id="path", line="path")

    body = echoed(await http_call(make(service, "/api/v2/"), spec, {"order_id": "a/b c?", "line": 7}))

    assert body["path"] == "/api/v2/orders/a%2Fb%20c%3F/lines/7"


@pytest.mark.parametrize("value", ["..", ".", ""])
async def test_dot_segments_and_empty_path_parameters_are_refused(
    service: LoopbackHTTPService, value: str
) -> None:
    outcome = await http_call(make(service), action(path="/orders/{id}", id="path"), {"id": value})

    assert outcome.error == "path parameter 'id' must not be empty, '.' or '..'"
    assert service.requests == []


async def test_missing_path_parameter_is_a_clear_error(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service), action(path="/orders/{id}", id="path"), {})

    assert outcome.status == "error" and outcome.error == "missing required path parameter 'id'"


async def test_get_arguments_go_to_the_query_string(service: LoopbackHTTPService) -> None:
    body = echoed(
        await http_call(
            make(service, "/?v=2"), action(), {"tag": ["a", "b"], "open": True, "n": 3, "x": None}
        )
    )

    assert body["query"] == {"v": ["2"], "tag": ["a", "b"], "open": ["true"], "n": ["3"]}


async def test_post_arguments_form_a_json_body_next_to_path_query_and_header_arguments(
    service: LoopbackHTTPService,
) -> None:
    spec = action("POST", "/orders/{id}/pay", id="path", dry_run="query", idem="header")
    args = {"id": 5, "dry_run": False, "idem": "k-1", "amount": 12.5, "lines": [{"sku": "é"}]}

    outcome = await http_call(make(service), spec, args)
    body = echoed(outcome)

    assert body["method"] == "POST" and body["path"] == "/orders/5/pay"
    assert body["query"] == {"dry_run": ["false"]}
    assert body["headers"]["idem"] == "k-1"
    assert body["headers"]["content-type"] == "application/json"
    assert json.loads(body["body"]) == {"amount": 12.5, "lines": [{"sku": "é"}]}
    assert outcome.request_bytes == len(service.requests[0].body)


async def test_header_argument_with_a_line_break_is_refused(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service), action(h="header"), {"h": "a\r\nX-Evil: 1"})

    assert outcome.error == "header argument 'h' must not contain line breaks"


async def test_base_url_must_be_http_or_https(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service, base_url="ftp://example.test/"), action(), {})

    assert outcome.error == "the connector's base URL must be an http:// or https:// URL with a host"


# --- authentication -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "header", "expected"),
    [
        (HttpAuth(type="api_key_header", api_key=API_KEY, api_key_name="X-Api-Key"), "x-api-key", API_KEY),
        (HttpAuth(type="bearer", token=TOKEN), "authorization", f"Bearer {TOKEN}"),
        (
            HttpAuth(type="basic", username="ann", password=PASSWORD),
            "authorization",
            "Basic " + base64.b64encode(f"ann:{PASSWORD}".encode()).decode(),
        ),
    ],
    ids=["api-key-header", "bearer", "basic"],  # the secrets are random: ids must not carry them
)
async def test_auth_header_is_sent_and_redacted_from_the_echo(
    service: LoopbackHTTPService, auth: HttpAuth, header: str, expected: str
) -> None:
    outcome = await http_call(make(service, auth=auth), action(), {})

    assert service.requests[0].headers[header] == expected
    assert echoed(outcome)["headers"][header] in ("[redacted]", "Bearer [redacted]", "Basic [redacted]")


async def test_api_key_in_query_is_sent_and_redacted(service: LoopbackHTTPService) -> None:
    auth = HttpAuth(type="api_key_query", api_key=API_KEY, api_key_name="key")

    outcome = await http_call(make(service, auth=auth), action(), {"q": "x"})

    assert service.requests[0].query == {"q": ["x"], "key": [API_KEY]}
    assert echoed(outcome)["query"]["key"] == ["[redacted]"]


async def test_oauth2_token_is_fetched_once_and_reused(service: LoopbackHTTPService) -> None:
    config = make(service, auth=oauth(service))

    first = await http_call(config, action(path="/protected/a"), {})
    second = await http_call(config, action(path="/protected/b"), {})

    assert first.status == second.status == "ok"
    assert service.token_requests == 1
    token_request = service.requests_to("/oauth/token")[0]
    assert token_request.headers["authorization"].startswith("Basic ")
    assert b"grant_type=client_credentials" in token_request.body
    assert "access-token-1" not in first.content  # the access token is a secret too


async def test_oauth2_client_secret_post_sends_credentials_as_form_fields(
    service: LoopbackHTTPService,
) -> None:
    config = make(service, auth=oauth(service, token_auth_method="client_secret_post", scope="orders:read"))

    assert (await http_call(config, action(path="/protected/a"), {})).status == "ok"

    token_request = service.requests_to("/oauth/token")[0]
    assert "authorization" not in token_request.headers
    assert (
        b"client_secret=client-secret-value" in token_request.body
        and b"scope=orders%3Aread" in token_request.body
    )


async def test_oauth2_token_is_refreshed_before_it_expires(
    service: LoopbackHTTPService, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(http_auth, "_now", lambda: now[0])
    service.token_expires_in = 600
    config = make(service, auth=oauth(service))
    await http_call(config, action(path="/protected/a"), {})

    now[0] += 539  # still more than a minute left
    await http_call(config, action(path="/protected/a"), {})
    assert service.token_requests == 1

    now[0] += 2  # inside the last minute: refresh before the API would refuse it
    await http_call(config, action(path="/protected/a"), {})
    assert service.token_requests == 2
    assert service.requests_to("/protected/a")[-1].headers["authorization"] == "Bearer access-token-2"


async def test_oauth2_token_is_refreshed_once_on_401(service: LoopbackHTTPService) -> None:
    config = make(service, auth=oauth(service))
    await http_call(config, action(path="/protected/a"), {})
    service.revoke_tokens()

    outcome = await http_call(config, action(path="/protected/a"), {})

    assert outcome.status == "ok"
    assert service.token_requests == 2
    assert [r.headers["authorization"] for r in service.requests_to("/protected/a")] == [
        "Bearer access-token-1",
        "Bearer access-token-1",
        "Bearer access-token-2",
    ]


async def test_oauth2_refresh_on_401_happens_only_once(service: LoopbackHTTPService) -> None:
    config = make(service, auth=oauth(service))
    service.script("/protected/a", Scripted(401, '{"error":"nope"}'), Scripted(401, '{"error":"nope"}'))

    outcome = await http_call(config, action(path="/protected/a"), {})

    assert outcome.status == "error" and outcome.http_status == 401
    assert service.token_requests == 2
    assert len(service.requests_to("/protected/a")) == 2


async def test_oauth2_wrong_client_secret_is_a_secret_free_error(service: LoopbackHTTPService) -> None:
    wrong = "wrong-" + uuid.uuid4().hex
    config = make(service, auth=oauth(service, client_secret=wrong))

    outcome = await http_call(config, action(path="/protected/a"), {})

    assert outcome.error == 'OAuth2 token request was refused: HTTP 401 {"error": "invalid_client"}'
    assert service.requests_to("/protected/a") == []


async def test_credentials_are_not_sent_to_another_origin_on_redirect(service: LoopbackHTTPService) -> None:
    with running_http_service() as other:
        auth = HttpAuth(type="api_key_query", api_key=API_KEY, api_key_name="key")
        config = make(service, auth=auth, default_headers={"X-Tenant": "acme"})
        spec = action(path="/redirect", trace="header")

        outcome = await http_call(config, spec, {"to": other.base_url + "/landing", "trace": "t-1"})

        assert echoed(outcome)["path"] == "/landing"
        hop = other.requests[0]
        assert hop.query == {} and "x-tenant" not in hop.headers and "trace" not in hop.headers
        assert service.requests[0].query["key"] == [API_KEY]


async def test_redirect_within_the_origin_keeps_credentials(service: LoopbackHTTPService) -> None:
    config = make(service, auth=HttpAuth(type="bearer", token=TOKEN))

    await http_call(config, action(path="/redirect"), {"to": "/next", "status": "307"})

    assert service.requests_to("/next")[0].headers["authorization"] == f"Bearer {TOKEN}"


async def test_see_other_after_post_becomes_a_get_without_body(service: LoopbackHTTPService) -> None:
    service.script("/orders", Scripted(303, "", headers={"Location": "/orders/9"}))

    body = echoed(await http_call(make(service), action("POST", "/orders"), {"amount": 1}))

    assert body["method"] == "GET" and body["path"] == "/orders/9" and body["body"] == ""


async def test_too_many_redirects_is_an_error(service: LoopbackHTTPService) -> None:
    service.script("/loop", *[Scripted(302, "", headers={"Location": "/loop"})] * 6)

    outcome = await http_call(make(service), action(path="/loop"), {})

    assert outcome.error == "too many redirects (more than 5)"
    assert len(service.requests_to("/loop")) == 6


# --- responses, limits, errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
async def test_response_is_cut_at_the_size_cap_without_reading_the_rest(
    service: LoopbackHTTPService, chunked: bool
) -> None:
    config = make(service, max_response_bytes=10_000)
    args = {"bytes": 50_000_000, **({"chunked": 1} if chunked else {})}

    outcome = await http_call(config, action(path="/big"), args)

    assert outcome.status == "ok" and outcome.truncated
    assert outcome.response_bytes == 10_000
    assert outcome.content == "x" * 10_000 + "\n[truncated: the response is larger than 10000 bytes]"


async def test_json_is_returned_compactly(service: LoopbackHTTPService) -> None:
    service.script("/pretty", Scripted(200, '{\n  "id": 1,\n  "name": "Acme  Ltd"\n}'))

    outcome = await http_call(make(service), action(path="/pretty"), {})

    assert outcome.content == '{"id":1,"name":"Acme  Ltd"}'


async def test_binary_response_is_described_not_dumped(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service), action(path="/binary"), {})

    assert outcome.content == "[72 bytes of image/png; not shown]"


async def test_http_error_status_is_an_error_outcome_with_a_body_excerpt(
    service: LoopbackHTTPService,
) -> None:
    outcome = await http_call(make(service), action(path="/status/404"), {})

    assert outcome.status == "error" and outcome.http_status == 404
    assert outcome.error == 'HTTP 404 Not Found: {"error":"status 404","detail":"scripted failure"}'


async def test_read_timeout_is_reported_and_not_retried(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service, read_timeout=0.2), action(path="/sleep"), {"seconds": 30})

    assert outcome.error == "127.0.0.1 did not answer within 0.2 s"
    assert len(service.requests_to("/sleep")) == 1


async def test_connection_refused_is_reported(service: LoopbackHTTPService) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    config = make(service, base_url=f"http://127.0.0.1:{free_port}")

    outcome = await http_call(config, action(), {})

    assert outcome.status == "error" and outcome.error.startswith("could not connect to 127.0.0.1")


# --- retries and the circuit breaker ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])
async def test_idempotent_methods_are_retried_on_502_503_504(
    service: LoopbackHTTPService, method: str
) -> None:
    service.script("/flaky", Scripted(502), Scripted(503), Scripted(204))

    outcome = await http_call(make(service, max_retries=2), action(method, "/flaky"), {})

    assert outcome.status == "ok" and outcome.http_status == 204
    assert len(service.requests_to("/flaky")) == 3


@pytest.mark.parametrize("method", ["POST", "PATCH"])
async def test_non_idempotent_methods_are_never_retried(service: LoopbackHTTPService, method: str) -> None:
    service.script("/flaky", Scripted(503), Scripted(200))

    outcome = await http_call(make(service, max_retries=2), action(method, "/flaky"), {})

    assert outcome.status == "error" and outcome.http_status == 503
    assert len(service.requests_to("/flaky")) == 1


async def test_retries_stop_after_max_retries(service: LoopbackHTTPService) -> None:
    service.script("/flaky", *[Scripted(504)] * 5)

    outcome = await http_call(make(service, max_retries=2), action(path="/flaky"), {})

    assert outcome.http_status == 504
    assert len(service.requests_to("/flaky")) == 3


async def test_500_is_not_retried(service: LoopbackHTTPService) -> None:
    outcome = await http_call(make(service, max_retries=2), action(path="/status/500"), {})

    assert outcome.http_status == 500 and len(service.requests) == 1


async def test_circuit_opens_after_consecutive_failures_and_refuses_without_a_request(
    service: LoopbackHTTPService,
) -> None:
    config = make(service, max_retries=0, circuit_failure_threshold=3)
    for _ in range(3):
        assert (await http_call(config, action(path="/status/500"), {})).http_status == 500

    refused = await http_call(config, action(path="/echo"), {})

    assert refused.status == "error" and refused.error.startswith("circuit open after 3 consecutive failures")
    assert len(service.requests) == 3


async def _circuit_opened_at_500s(
    service: LoopbackHTTPService, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[float], HttpConnectorConfig]:
    """A config whose circuit opens for 30 s after 2 failures, opened by two 503s at second 500 of a clock
    the test moves (``now[0]``)."""
    now = [500.0]
    monkeypatch.setattr(circuit, "_now", lambda: now[0])
    config = make(service, max_retries=0, circuit_failure_threshold=2, circuit_open_seconds=30)
    for _ in range(2):
        await http_call(config, action(path="/status/503"), {})
    return now, config


async def test_half_open_circuit_lets_one_trial_through_and_closes_on_success(
    service: LoopbackHTTPService, monkeypatch: pytest.MonkeyPatch
) -> None:
    now, config = await _circuit_opened_at_500s(service, monkeypatch)
    now[0] += 29
    assert (await http_call(config, action(), {})).error.startswith("circuit open")

    now[0] += 2
    trial = await http_call(config, action(), {})
    after = await http_call(config, action(), {})

    assert trial.status == after.status == "ok"
    assert len(service.requests_to("/echo")) == 2


async def test_failed_trial_opens_the_circuit_again(
    service: LoopbackHTTPService, monkeypatch: pytest.MonkeyPatch
) -> None:
    now, config = await _circuit_opened_at_500s(service, monkeypatch)
    now[0] += 31

    trial = await http_call(config, action(path="/status/503"), {})
    refused = await http_call(config, action(), {})

    assert trial.http_status == 503
    assert refused.error.startswith("circuit open")
    assert service.requests_to("/echo") == []


async def test_client_errors_do_not_open_the_circuit(service: LoopbackHTTPService) -> None:
    config = make(service, circuit_failure_threshold=2)
    for _ in range(4):
        await http_call(config, action(path="/status/404"), {})

    assert (await http_call(config, action(), {})).status == "ok"


# --- the idempotency key of a run's call -----------------------------------------------------------------------------

KEY = "run-7:call-1:0123456789abcdef"


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_write_methods_send_the_calls_idempotency_key(
    service: LoopbackHTTPService, method: str
) -> None:
    outcome = await http_call(make(service), action(method, "/orders"), {"amount": 1}, idempotency_key=KEY)

    assert outcome.status == "ok", outcome.error
    assert service.requests_to("/orders")[0].headers["idempotency-key"] == KEY


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
async def test_read_methods_send_no_idempotency_key(service: LoopbackHTTPService, method: str) -> None:
    await http_call(make(service), action(method, "/orders"), {}, idempotency_key=KEY)

    assert "idempotency-key" not in service.requests_to("/orders")[0].headers


async def test_a_call_without_a_key_sends_no_idempotency_header(service: LoopbackHTTPService) -> None:
    await http_call(make(service), action("POST", "/orders"), {"amount": 1})

    assert "idempotency-key" not in service.requests_to("/orders")[0].headers


async def test_every_retry_of_a_call_sends_the_same_key(service: LoopbackHTTPService) -> None:
    service.script("/orders/9", Scripted(503), Scripted(502), Scripted(200, "{}"))

    outcome = await http_call(
        make(service, max_retries=2), action("PUT", "/orders/9"), {"amount": 1}, idempotency_key=KEY
    )

    assert outcome.status == "ok"
    assert [r.headers["idempotency-key"] for r in service.requests_to("/orders/9")] == [KEY] * 3


async def test_the_connector_names_the_header_or_sends_none(service: LoopbackHTTPService) -> None:
    await http_call(
        make(service, idempotency_header="X-Request-Id"), action("POST", "/a"), {}, idempotency_key=KEY
    )
    await http_call(make(service, idempotency_header=""), action("POST", "/b"), {}, idempotency_key=KEY)

    renamed = service.requests_to("/a")[0].headers
    assert renamed["x-request-id"] == KEY and "idempotency-key" not in renamed
    assert not {"idempotency-key", "x-request-id"} & set(service.requests_to("/b")[0].headers)


async def test_the_key_replaces_a_default_header_or_an_argument_of_the_same_name(
    service: LoopbackHTTPService,
) -> None:
    config = make(service, default_headers={"idempotency-key": "fixed-by-admin"})
    spec = action("POST", "/orders", **{"Idempotency-Key": "header"})

    await http_call(
        config, spec, {"Idempotency-Key": "made-up-by-the-model", "amount": 1}, idempotency_key=KEY
    )

    sent = service.requests_to("/orders")[0]
    assert sent.headers["idempotency-key"] == KEY and sent.json() == {"amount": 1}
    prepared = PreparedRequest(
        method="POST", url="http://x/", headers=(("idempotency-KEY", "a"), ("X-A", "1"))
    )
    assert with_header(prepared, "Idempotency-Key", KEY).headers == (("X-A", "1"), ("Idempotency-Key", KEY))


async def test_the_key_follows_redirects_within_the_origin_only(service: LoopbackHTTPService) -> None:
    spec = action("POST", "/redirect", to="query", status="query")
    with running_http_service() as other:
        await http_call(make(service), spec, {"to": "/next", "status": "307"}, idempotency_key=KEY)
        await http_call(
            make(service), spec, {"to": other.base_url + "/landing", "status": "307"}, idempotency_key=KEY
        )

        assert service.requests_to("/next")[0].headers["idempotency-key"] == KEY
        assert "idempotency-key" not in other.requests_to("/landing")[0].headers


async def test_a_key_that_is_not_visible_ascii_is_refused_before_sending(
    service: LoopbackHTTPService,
) -> None:
    outcome = await http_call(make(service), action("POST", "/orders"), {}, idempotency_key="run:付款")

    assert outcome.error == "the idempotency key must be 1 to 255 visible ASCII characters"
    assert service.requests == []


# --- secrets and test connection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "auth",
    [
        HttpAuth(type="api_key_header", api_key=API_KEY, api_key_name="X-Api-Key"),
        HttpAuth(type="api_key_query", api_key=API_KEY),
        HttpAuth(type="bearer", token=TOKEN),
        HttpAuth(type="basic", username="ann", password=PASSWORD),
    ],
    ids=lambda a: a.type,
)
async def test_secrets_never_appear_in_outcomes_or_logs(
    service: LoopbackHTTPService, auth: HttpAuth, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = make(service, auth=auth, max_retries=1)
    secrets = [*auth.secret_values(), base64.b64encode(f"ann:{PASSWORD}".encode()).decode()]
    service.script("/fail", Scripted(500, json.dumps({"echo": [API_KEY, TOKEN, PASSWORD]})))

    outcomes = [
        await http_call(config, action(), {}),
        await http_call(config, action(path="/fail"), {}),
        await http_call(config, action(path="/status/401"), {}),
        await http_call(make(service, auth=auth, base_url="http://127.0.0.1:1"), action(), {}),
    ]
    tested = await http_test_connection(config)

    for text in [o.content + o.error for o in outcomes] + [str(tested)]:
        assert not any(secret in text for secret in secrets), text
    assert not any(secret in caplog.text for secret in secrets)


async def test_test_connection_reports_reachability_and_refused_credentials(
    service: LoopbackHTTPService,
) -> None:
    reachable = await http_test_connection(make(service))
    service.script("/", Scripted(401, "{}"))
    refused = await http_test_connection(make(service, auth=HttpAuth(type="bearer", token=TOKEN)))

    assert isinstance(reachable, ConnectionWorks) and reachable.detail == "127.0.0.1 answered HTTP 200 OK"
    assert refused == ConnectionFailed(
        reason="127.0.0.1 refused the credentials (HTTP 401 Unauthorized)",
        http_status=401,
        latency_ms=refused.latency_ms,
    )
    assert service.requests[1].headers["authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("status", [404, 410])
async def test_test_connection_does_not_say_works_when_nothing_answers_at_the_base_url(
    service: LoopbackHTTPService, status: int
) -> None:
    service.script("/api/v1", Scripted(status, "{}"))

    outcome = await http_test_connection(make(service, "/api/v1?tenant=acme"))

    assert isinstance(outcome, ConnectionUnconfirmed) and outcome.http_status == status
    assert outcome.reason.startswith(f"the server answered HTTP {status} ")
    assert outcome.reason.endswith(f" at {service.base_url}/api/v1: check the base URL")


@pytest.mark.parametrize(
    ("status", "verdict", "text"),
    [
        (204, "works", "127.0.0.1 answered HTTP 204 No Content"),
        (405, "works", "127.0.0.1 answered HTTP 405 Method Not Allowed to GET: the base URL exists"),
        (404, "unconfirmed", "the server answered HTTP 404 Not Found at "),
        (403, "failed", "127.0.0.1 refused the credentials (HTTP 403 Forbidden)"),
        (400, "failed", "127.0.0.1 answered HTTP 400 Bad Request"),
        (429, "failed", "127.0.0.1 answered HTTP 429 Too Many Requests"),
        (500, "failed", "127.0.0.1 answered HTTP 500 Internal Server Error"),
    ],
)
async def test_test_connection_judges_the_status_of_the_base_url(
    service: LoopbackHTTPService, status: int, verdict: str, text: str
) -> None:
    service.script("/", Scripted(status, ""))

    outcome = await http_test_connection(make(service))

    assert outcome.type == verdict
    assert (outcome.detail if isinstance(outcome, ConnectionWorks) else outcome.reason).startswith(text)


async def test_test_connection_fetches_the_oauth2_token(service: LoopbackHTTPService) -> None:
    outcome = await http_test_connection(make(service, auth=oauth(service)))

    assert outcome.type == "works"
    assert service.token_requests == 1


async def test_connections_are_reused_across_calls(service: LoopbackHTTPService) -> None:
    config = make(service)
    for _ in range(3):
        await http_call(config, action(), {})

    assert service.connections == 1


def test_test_connection_works_from_sync_code_in_throwaway_loops(service: LoopbackHTTPService) -> None:
    config = make(service)

    results = [async_to_sync(http_test_connection)(config) for _ in range(2)]

    assert [r.type for r in results] == ["works", "works"]
