"""The websocket stack of ``platform_core.wiring.asgi``: origin validation, then session or Bearer auth."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.urls import path

from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.identity.api_keys.ws_auth import SessionOrTokenAuthMiddleware
from platform_core.wiring.asgi import _allowed_origins, _PortAwareOriginValidator, application
from tests.factories import PASSWORD, UserFactory


class WhoAmI(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=4401)
            return
        await self.accept()
        await self.send_json(
            {"user": user.username, "session": "session" in self.scope, "auth": self.scope.get("auth_method")}
        )


def _app():
    return _PortAwareOriginValidator(
        SessionOrTokenAuthMiddleware(URLRouter([path("ws/whoami/", WhoAmI.as_asgi())])), _allowed_origins()
    )


async def _connect(headers):
    communicator = WebsocketCommunicator(_app(), "/ws/whoami/", headers=headers)
    connected, code = await communicator.connect()
    return communicator, connected, code


pytestmark = pytest.mark.django_db(transaction=True)


async def test_bearer_token_authenticates_a_websocket_handshake():
    user = await database_sync_to_async(UserFactory)(username="wsuser")
    _, raw = await database_sync_to_async(api_token_issue)(user=user)
    communicator, connected, _ = await _connect([(b"authorization", f"Bearer {raw}".encode())])
    assert connected
    # Never through the session stack: a Bearer socket keeps no session (nor its copies of the scope).
    assert await communicator.receive_json_from() == {"user": "wsuser", "session": False, "auth": "bearer"}
    await communicator.disconnect()


async def _browser_session_cookie() -> str:
    """The ``Cookie`` header of a browser signed in as the new user ``browser``."""
    await database_sync_to_async(UserFactory)(username="browser")
    client = Client()
    assert await database_sync_to_async(client.login)(username="browser", password=PASSWORD)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def test_a_bearer_header_is_judged_alone_even_beside_a_valid_session_cookie():
    cookie = await _browser_session_cookie()
    communicator, connected, code = await _connect(
        [(b"cookie", cookie.encode()), (b"authorization", b"Bearer apt_wrong")]
    )
    assert not connected and code == 4401


async def test_invalid_bearer_token_is_anonymous_and_closed_with_4401():
    communicator, connected, code = await _connect([(b"authorization", b"Bearer apt_wrong")])
    assert not connected and code == 4401


async def test_session_cookie_authenticates_a_browser_handshake():
    cookie = await _browser_session_cookie()
    communicator, connected, _ = await _connect(
        [(b"cookie", cookie.encode()), (b"origin", b"http://127.0.0.1:8000")]
    )
    assert connected
    assert await communicator.receive_json_from() == {"user": "browser", "session": True, "auth": None}
    await communicator.disconnect()


async def test_foreign_origin_is_refused():
    communicator, connected, _ = await _connect([(b"origin", b"https://evil.example")])
    assert not connected


async def test_unknown_websocket_path_is_refused_by_the_real_application():
    communicator = WebsocketCommunicator(
        application, "/ws/nowhere/", headers=[(b"origin", b"http://127.0.0.1:8000")]
    )
    connected, _ = await communicator.connect()
    assert connected  # accepted only to say why: closed at once with 4404 (no route), never a 500
    assert await communicator.receive_output() == {"type": "websocket.close", "code": 4404}
    await communicator.disconnect()
