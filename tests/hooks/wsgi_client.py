"""Bearer-token API calls through the ``wsgi`` fixture's in-process client (tests/hooks/conftest.py):
Django's test client would reconnect the connection-closing signal that fixture keeps off."""

from __future__ import annotations

import httpx

from platform_core.identity.api_keys.keys import api_token_issue


class WsgiApi:
    """Bearer-token API calls of one user through the in-process WSGI client."""

    def __init__(self, wsgi: httpx.Client, user) -> None:
        self.wsgi = wsgi
        self.headers = {"Authorization": f"Bearer {api_token_issue(user=user)[1]}"}

    def get(self, path: str) -> httpx.Response:
        return self.wsgi.get(path, headers=self.headers)

    def post(self, path: str, data: dict | None = None, format: str = "json") -> httpx.Response:
        return self.wsgi.post(path, json=data or {}, headers=self.headers)

    def patch(self, path: str, data: dict, format: str = "json") -> httpx.Response:
        return self.wsgi.patch(path, json=data, headers=self.headers)
