"""Feishu's web sign-in (OAuth, authen v1) for the fake Feishu server.

:class:`OAuthSide` (mixed into :class:`tests.fakes.feishu_server.FakeFeishu`) answers what django-allauth's
Feishu provider calls, with Feishu's shapes and body codes:

- ``GET /open-apis/authen/v1/index?app_id&redirect_uri&state``: the authorize page. The fake consents at
  once as the user :meth:`OAuthSide.sign_in_as` chose (the person signed in to Feishu in the browser)
  and redirects (302) to ``redirect_uri`` with a one-time ``code`` (5 minutes) and the ``state``.
- ``POST /open-apis/auth/v3/app_access_token/internal``: JSON ``{app_id, app_secret}`` of a registered
  app; ``{code: 0, app_access_token: "a-…", expire}``.
- ``POST /open-apis/authen/v1/access_token``: JSON ``{grant_type: "authorization_code", code}`` with the
  app access token in the body (``app_access_token``) or as ``Authorization: Bearer``; the code works once,
  for the app it was issued to; ``{code: 0, data: {access_token: "u-…", token_type: "Bearer", …}}``.
- ``GET /open-apis/authen/v1/user_info`` with ``Authorization: Bearer u-…``: ``{code: 0, data: {name,
  open_id, union_id, tenant_key, email, enterprise_email, …}}``.

Records: ``oauth_logins`` (one :class:`OAuthLogin` per code redeemed).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.fakes.feishu_callbacks import FAKE_TENANT_KEY

CODE_TTL = 300
USER_TOKEN_TTL = 6900
# Feishu's body codes for these calls: 20003 invalid code, 20005 invalid user token, 10014 bad app.
INVALID_CODE, INVALID_USER_TOKEN, BAD_APP = 20003, 20005, 10014

Reply = tuple[int, dict[str, Any], dict[str, str]]


@dataclass(frozen=True)
class FeishuUser:
    """A person signed in to Feishu: what ``user_info`` answers about them."""

    name: str
    open_id: str
    union_id: str
    tenant_key: str = FAKE_TENANT_KEY
    email: str = ""
    enterprise_email: str = ""

    def user_info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "en_name": self.name,
            "avatar_url": "",
            "avatar_big": "",
            "open_id": self.open_id,
            "union_id": self.union_id,
            "email": self.email,
            "enterprise_email": self.enterprise_email,
            "user_id": f"u_{self.open_id[-6:]}",
            "tenant_key": self.tenant_key,
        }


@dataclass(frozen=True)
class OAuthLogin:
    app_id: str
    open_id: str
    redirect_uri: str


class OAuthSide:
    """Feishu's OAuth endpoints; state lives in the fake server (reset with it)."""

    _lock: threading.RLock
    apps: dict[str, str]

    def _reset_oauth(self) -> None:
        self.signed_in: FeishuUser | None = None
        self.oauth_logins: list[OAuthLogin] = []
        self._app_tokens: dict[str, str] = {}
        self._codes: dict[str, tuple[str, FeishuUser, str, float]] = {}
        self._user_tokens: dict[str, tuple[FeishuUser, float]] = {}

    def sign_in_as(
        self,
        name: str = "Li Lei",
        *,
        open_id: str | None = None,
        union_id: str | None = None,
        tenant_key: str = FAKE_TENANT_KEY,
        email: str = "",
        enterprise_email: str = "",
    ) -> FeishuUser:
        """The Feishu user who consents on the next authorize page (random ids unless given)."""
        user = FeishuUser(
            name=name,
            open_id=open_id or f"ou_{secrets.token_hex(12)}",
            union_id=union_id or f"on_{secrets.token_hex(12)}",
            tenant_key=tenant_key,
            email=email,
            enterprise_email=enterprise_email,
        )
        with self._lock:
            self.signed_in = user
        return user

    def _oauth_handle(self, method: str, target: str, headers: Any, raw: bytes) -> Reply | None:
        url = urlsplit(target)
        path = url.path.rstrip("/")
        if method == "GET" and path == "/open-apis/authen/v1/index":
            return self._authorize(parse_qs(url.query))
        if method == "POST" and path == "/open-apis/auth/v3/app_access_token/internal":
            return self._app_access_token(_json(raw))
        if method == "POST" and path == "/open-apis/authen/v1/access_token":
            return self._user_access_token(_json(raw), headers.get("Authorization") or "")
        if method == "GET" and path == "/open-apis/authen/v1/user_info":
            return self._user_info(headers.get("Authorization") or "")
        return None

    def _authorize(self, query: dict[str, list[str]]) -> Reply:
        app_id = (query.get("app_id") or [""])[0]
        redirect_uri = (query.get("redirect_uri") or [""])[0]
        state = (query.get("state") or [""])[0]
        with self._lock:
            if app_id not in self.apps or not redirect_uri:
                return 400, {"code": BAD_APP, "msg": "app_id or redirect_uri is invalid"}, {}
            user = self.signed_in
            if user is None:
                return 401, {"code": 1, "msg": "fake Feishu: nobody is signed in (call sign_in_as)"}, {}
            code = secrets.token_urlsafe(16)
            self._codes[code] = (app_id, user, redirect_uri, time.monotonic() + CODE_TTL)
        params = {"code": code, **({"state": state} if state else {})}
        sep = "&" if urlsplit(redirect_uri).query else "?"
        return 302, {"code": 0, "msg": "redirect"}, {"Location": f"{redirect_uri}{sep}{urlencode(params)}"}

    def _app_access_token(self, body: Any) -> Reply:
        with self._lock:
            if (
                not isinstance(body, dict)
                or not body.get("app_secret")
                or self.apps.get(body.get("app_id")) != body.get("app_secret")
            ):
                return 400, {"code": BAD_APP, "msg": "app_id or app_secret is invalid"}, {}
            token = f"a-{secrets.token_hex(12)}"
            self._app_tokens[token] = body["app_id"]
        return 200, {"code": 0, "msg": "ok", "app_access_token": token, "expire": 7200}, {}

    def _user_access_token(self, body: Any, authorization: str) -> Reply:
        if not isinstance(body, dict) or body.get("grant_type") != "authorization_code":
            return 400, {"code": INVALID_CODE, "msg": "grant_type must be authorization_code"}, {}
        app_token = body.get("app_access_token") or authorization.removeprefix("Bearer ").strip()
        with self._lock:
            app_id = self._app_tokens.get(app_token or "")
            if app_id is None:
                return 400, {"code": 99991663, "msg": "Invalid access token for authorization"}, {}
            entry = self._codes.pop(str(body.get("code") or ""), None)
            if entry is None or entry[0] != app_id or entry[3] <= time.monotonic():
                return 400, {"code": INVALID_CODE, "msg": "the code is invalid, used or expired"}, {}
            user = entry[1]
            token = f"u-{secrets.token_hex(12)}"
            self._user_tokens[token] = (user, time.monotonic() + USER_TOKEN_TTL)
            self.oauth_logins.append(OAuthLogin(app_id, user.open_id, entry[2]))
        data = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": USER_TOKEN_TTL,
            "refresh_token": f"ur-{secrets.token_hex(12)}",
            "refresh_expires_in": 2592000,
            **user.user_info(),
        }
        return 200, {"code": 0, "msg": "success", "data": data}, {}

    def _user_info(self, authorization: str) -> Reply:
        token = authorization.removeprefix("Bearer ").strip()
        with self._lock:
            entry = self._user_tokens.get(token)
        if entry is None or entry[1] <= time.monotonic():
            return 401, {"code": INVALID_USER_TOKEN, "msg": "the user access token is invalid"}, {}
        return 200, {"code": 0, "msg": "success", "data": entry[0].user_info()}, {}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
