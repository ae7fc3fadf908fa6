"""A small OpenID Connect provider on loopback, for the sign-in tests.

Discovery (``/.well-known/openid-configuration``), JWKS (one RSA key), ``/authorize`` (consents at once
as the user :meth:`FakeOIDCProvider.sign_in_as` chose and redirects with a one-time code), ``/token``
(``authorization_code`` with ``client_secret_post`` or ``client_secret_basic`` and PKCE S256; answers an
RS256-signed ``id_token``) and ``/userinfo`` (Bearer). ``discovery_overrides`` replaces entries of the
discovery document (e.g. a token endpoint on a host the SSRF guard refuses).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.threaded_server import OwnedHTTPServer, ThreadedServer

FAKE_OIDC_CLIENT_ID = "platform-client"
FAKE_OIDC_CLIENT_SECRET = "fake-oidc-secret-do-not-log"

Reply = tuple[int, dict[str, Any], dict[str, str]]


@dataclass(frozen=True)
class OIDCUser:
    """The person signed in at the provider: the claims it reports."""

    sub: str
    email: str
    email_verified: bool = True
    name: str = ""
    preferred_username: str = ""

    def claims(self) -> dict[str, Any]:
        claims: dict[str, Any] = {"sub": self.sub, "email": self.email, "email_verified": self.email_verified}
        if self.name:
            claims["name"] = self.name
        if self.preferred_username:
            claims["preferred_username"] = self.preferred_username
        return claims


@dataclass
class _Grant:
    user: OIDCUser
    redirect_uri: str
    nonce: str | None
    challenge: str | None
    expires_at: float


@dataclass
class FakeOIDCProvider(ThreadedServer):
    """The provider; ``requests`` records ``(method, path)`` of every request it answered."""

    client_id: str = FAKE_OIDC_CLIENT_ID
    client_secret: str = FAKE_OIDC_CLIENT_SECRET
    discovery_overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(4)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.signed_in: OIDCUser | None = None
            self.requests: list[tuple[str, str]] = []
            self.discovery_overrides = {}
            self._grants: dict[str, _Grant] = {}
            self._tokens: dict[str, OIDCUser] = {}

    def sign_in_as(
        self, email: str, *, sub: str | None = None, verified: bool = True, name: str = ""
    ) -> OIDCUser:
        user = OIDCUser(sub=sub or secrets.token_hex(8), email=email, email_verified=verified, name=name)
        with self._lock:
            self.signed_in = user
        return user

    @property
    def issuer(self) -> str:
        return self.address

    def discovery(self) -> dict[str, Any]:
        base = self.address
        doc: dict[str, Any] = {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "userinfo_endpoint": f"{base}/userinfo",
            "jwks_uri": f"{base}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid", "profile", "email"],
        }
        doc.update(self.discovery_overrides)
        return doc

    def _handle(self, method: str, target: str, headers: Any, raw: bytes) -> Reply:
        url = urlsplit(target)
        with self._lock:
            self.requests.append((method, url.path))
        if method == "GET" and url.path == "/.well-known/openid-configuration":
            return 200, self.discovery(), {}
        if method == "GET" and url.path == "/jwks":
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
            return 200, {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}, {}
        if method == "GET" and url.path == "/authorize":
            return self._authorize(parse_qs(url.query))
        if method == "POST" and url.path == "/token":
            return self._token(parse_qs(raw.decode()), headers.get("Authorization") or "")
        if method == "GET" and url.path == "/userinfo":
            with self._lock:
                user = self._tokens.get((headers.get("Authorization") or "").removeprefix("Bearer ").strip())
            if user is None:
                return 401, {"error": "invalid_token"}, {}
            return 200, user.claims(), {}
        return 404, {"error": "not_found"}, {}

    def _authorize(self, query: dict[str, list[str]]) -> Reply:
        q = {k: v[0] for k, v in query.items()}
        if (
            q.get("client_id") != self.client_id
            or q.get("response_type") != "code"
            or not q.get("redirect_uri")
        ):
            return 400, {"error": "invalid_request"}, {}
        if "openid" not in (q.get("scope") or "").split():
            return 400, {"error": "invalid_scope"}, {}
        with self._lock:
            user = self.signed_in
            if user is None:
                return 401, {"error": "login_required"}, {}
            code = secrets.token_urlsafe(16)
            self._grants[code] = _Grant(
                user, q["redirect_uri"], q.get("nonce"), q.get("code_challenge"), time.monotonic() + 300
            )
        params = {"code": code, **({"state": q["state"]} if q.get("state") else {})}
        return 302, {}, {"Location": f"{q['redirect_uri']}?{urlencode(params)}"}

    def _token(self, form: dict[str, list[str]], authorization: str) -> Reply:
        f = {k: v[0] for k, v in form.items()}
        client_id, secret = f.get("client_id"), f.get("client_secret")
        if authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if client_id != self.client_id or secret != self.client_secret:
            return 401, {"error": "invalid_client"}, {}
        if f.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}, {}
        with self._lock:
            grant = self._grants.pop(f.get("code") or "", None)
        if (
            grant is None
            or grant.expires_at <= time.monotonic()
            or grant.redirect_uri != f.get("redirect_uri")
        ):
            return 400, {"error": "invalid_grant"}, {}
        if grant.challenge is not None:
            verifier = (f.get("code_verifier") or "").encode()
            computed = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            if computed != grant.challenge:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}, {}
        now = int(time.time())
        claims = {
            **grant.user.claims(),
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            **({"nonce": grant.nonce} if grant.nonce else {}),
        }
        id_token = jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.kid})
        access = secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[access] = grant.user
        return (
            200,
            {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "id_token": id_token},
            {},
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: OwnedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, payload, extra = self.server.owner._handle(method, self.path, self.headers, raw)
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


FakeOIDCProvider.handler = _Handler
