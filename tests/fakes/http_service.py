"""A real HTTP service on loopback for connector tests (stdlib server in a background thread).

It counts accepted TCP connections and records every request, so tests can prove that a blocked
target was never contacted and that only idempotent requests were retried. Routes:

- ``POST /oauth/token``: OAuth2 client credentials (HTTP basic or form fields); issues ``access-token-<n>`` (long enough to be redacted).
- ``/protected/...``: 401 unless ``Authorization: Bearer <a token it issued and has not revoked>``,
  then like the echo route.
- ``/redirect?to=<url>&status=302``: a redirect.
- ``/big?bytes=N&type=text/plain&chunked=1``: N bytes of ``x`` (or a JSON array for JSON types).
- ``/sleep?seconds=S``: answers after S seconds (or at once when the service stops).
- ``/status/<code>``: that status with a small JSON error body.
- ``/binary``: a few bytes of ``image/png``.
- ``/echo-encoded?status=200``: the request's credential (a bearer token, or basic auth's password)
  echoed back encoded: base64 (alone, inside ``user:secret``, at each byte alignment, URL-safe without
  padding), URL-encoded, hex, upper-case and reversed. A hostile or careless target.
- anything else: echoes method, path, query, headers and body as JSON.

:meth:`LoopbackHTTPService.script` queues replies for one exact path, consumed in order before the
route runs, e.g. two 503s and then the normal answer.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote_plus, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the service received it (header names lower-cased)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)


@dataclass(frozen=True)
class Scripted:
    """A queued reply for one path."""

    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def encoded_echoes(authorization: str) -> dict[str, str]:
    """The credential of an ``Authorization`` header in the encodings ``/echo-encoded`` answers with."""
    scheme, _, value = authorization.partition(" ")
    secret = value
    if scheme.lower() == "basic":
        secret = base64.b64decode(value).decode().partition(":")[2]
    raw = secret.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "basic": base64.b64encode(b"admin:" + raw).decode(),
        "shifted_1": base64.b64encode(b"x" + raw + b"y").decode(),
        "shifted_2": base64.b64encode(b"xy" + raw).decode(),
        "urlsafe": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "url": quote(secret, safe=""),
        "hex": raw.hex(),
        "upper": secret.upper(),
        "reversed": secret[::-1],
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, service: LoopbackHTTPService, address: tuple[str, int], family: int) -> None:
        self.address_family = family
        self.service = service
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        self.service._count_connection()
        return sock, address

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that stop reading early (size caps, timeouts) are expected here


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 10

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        recorded = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        service = self.server.service
        scripted = service._record(recorded)
        try:
            if scripted is not None:
                payload = scripted.body.encode() if isinstance(scripted.body, str) else scripted.body
                self._send(scripted.status, payload, scripted.content_type, scripted.headers)
            else:
                self._route(recorded)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _handle

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, data: object) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _route(self, req: RecordedRequest) -> None:
        service = self.server.service
        first = {k: v[0] for k, v in req.query.items()}
        if req.path == "/oauth/token":
            token = service._issue_token(req)
            if token is None:
                self._send_json(401, {"error": "invalid_client"})
            else:
                body = {"access_token": token, "token_type": "Bearer", "expires_in": service.token_expires_in}
                self._send_json(200, body)
        elif req.path.startswith("/protected/") and not service._token_valid(
            req.headers.get("authorization", "")
        ):
            self._send_json(401, {"error": "invalid_token"})
        elif req.path == "/redirect":
            status = int(first.get("status", "302"))
            self._send(status, b"", "text/plain", {"Location": first["to"]})
        elif req.path == "/big":
            self._big(int(first.get("bytes", "1000")), first.get("type", "text/plain"), "chunked" in first)
        elif req.path == "/sleep":
            service._stopping.wait(float(first.get("seconds", "5")))
            self._send(200, b"slept", "text/plain")
        elif req.path.startswith("/status/"):
            code = int(req.path.rsplit("/", 1)[1])
            self._send_json(code, {"error": f"status {code}", "detail": "scripted failure"})
        elif req.path == "/binary":
            self._send(200, b"\x89PNG\r\n\x1a\n" + bytes(range(64)), "image/png")
        elif req.path == "/echo-encoded":
            self._send_json(
                int(first.get("status", "200")), encoded_echoes(req.headers.get("authorization", ""))
            )
        else:
            self._send_json(
                200,
                {
                    "method": req.method,
                    "path": req.path,
                    "query": req.query,
                    "headers": req.headers,
                    "body": req.body.decode("utf-8", errors="replace"),
                },
            )

    def _big(self, size: int, content_type: str, chunked: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        sent = 0
        block = b"x" * 65536
        while sent < size and not self.server.service._stopping.is_set():
            piece = block[: min(len(block), size - sent)]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            sent += len(piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


class LoopbackHTTPService:
    """The service; use :func:`running_http_service` or ``start()``/``stop()``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.oauth_client_id = "client-id"
        self.oauth_client_secret = "client-secret-value"
        self.token_expires_in: float = 3600
        self._lock = threading.Lock()
        self._connections = 0
        self._requests: list[RecordedRequest] = []
        self._scripts: dict[str, deque[Scripted]] = defaultdict(deque)
        self._issued = 0
        self._valid_tokens: set[str] = set()
        self._stopping = threading.Event()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = _Server(self, (host, 0), family)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="loopback-http",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def start(self) -> LoopbackHTTPService:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # --- what tests read -------------------------------------------------------------------------
    @property
    def connections(self) -> int:
        with self._lock:
            return self._connections

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def token_requests(self) -> int:
        return len(self.requests_to("/oauth/token"))

    # --- what tests arrange ----------------------------------------------------------------------
    def script(self, path: str, *replies: Scripted) -> None:
        with self._lock:
            self._scripts[path].extend(replies)

    def revoke_tokens(self) -> None:
        with self._lock:
            self._valid_tokens.clear()

    # --- called from the server threads ------------------------------------------------------------
    def _count_connection(self) -> None:
        with self._lock:
            self._connections += 1

    def _record(self, request: RecordedRequest) -> Scripted | None:
        with self._lock:
            self._requests.append(request)
            queue = self._scripts.get(request.path)
            return queue.popleft() if queue else None

    def _issue_token(self, req: RecordedRequest) -> str | None:
        form = {k: v[0] for k, v in parse_qs(req.body.decode(), keep_blank_values=True).items()}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        auth = req.headers.get("authorization", "")
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = unquote_plus(client_id), unquote_plus(secret)
        if form.get("grant_type") != "client_credentials":
            return None
        if (client_id, secret) != (self.oauth_client_id, self.oauth_client_secret):
            return None
        with self._lock:
            self._issued += 1
            token = f"access-token-{self._issued}"
            self._valid_tokens.add(token)
            return token

    def _token_valid(self, authorization: str) -> bool:
        with self._lock:
            return authorization.startswith("Bearer ") and authorization[7:] in self._valid_tokens


@contextmanager
def running_http_service(host: str = "127.0.0.1") -> Iterator[LoopbackHTTPService]:
    """A started service, stopped on exit."""
    service = LoopbackHTTPService(host).start()
    try:
        yield service
    finally:
        service.stop()
