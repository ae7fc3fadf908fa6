"""API keys on the chat websocket: the chat scope, an org key's reach, and revocation at once, even on a
socket that is already open."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import override_settings
from django.utils import timezone

from platform_core.asgi import application
from platform_core.identity.api_keys.keys import api_key_create, api_key_revoke
from platform_core.models import ApiKey, AuditLog, Membership, Role
from tests.agents.factories import ConversationFactory
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 10


async def _open(conversation_id, raw: str, client=("127.0.0.1", 40000)):
    communicator = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation_id}/",
        headers=[(b"authorization", f"Bearer {raw}".encode())],
    )
    communicator.scope["client"] = client
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    first = (
        None
        if await communicator.receive_nothing(timeout=0.3)
        else await communicator.receive_output(TIMEOUT)
    )
    return communicator, (first or {}).get("code") if (first or {}).get("type") == "websocket.close" else None


@database_sync_to_async
def _world():
    acme = OrganizationFactory(slug="acme")
    globex = OrganizationFactory(slug="globex")
    mia = member_of(acme, Role.MEMBER, username="mia")
    ada = member_of(acme, Role.ADMIN, username="ada")
    member_of(globex, Role.ADMIN, username="ada-at-globex")
    return acme, globex, mia, ada


@database_sync_to_async
def _personal(user, *scopes, **kwargs):
    return api_key_create(name="k", scopes=scopes, owner=user, actor=user, **kwargs)


async def test_a_key_without_the_chat_scope_is_closed_with_4403():
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    created = await _personal(mia, "read")
    communicator, code = await _open(conversation.pk, created.raw)
    assert code == 4403
    await communicator.disconnect()


async def test_a_chat_key_opens_the_users_conversation_and_its_first_address_is_audited():
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    created = await _personal(mia, "chat")
    communicator, code = await _open(conversation.pk, created.raw, client=("10.9.8.7", 5555))
    assert code is None
    await communicator.disconnect()
    rows = await database_sync_to_async(
        lambda: list(
            AuditLog.objects.filter(action="api_key.used_from_new_ip").values_list("ip_address", flat=True)
        )
    )()
    assert rows == ["10.9.8.7"]


async def test_revoking_a_key_closes_its_open_socket_at_once_and_refuses_new_ones():
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    created = await _personal(mia, "chat")
    communicator, code = await _open(conversation.pk, created.raw)
    assert code is None
    await database_sync_to_async(api_key_revoke)(key=created.key, actor=mia)
    # the client sends nothing: the revocation itself closes the socket
    closed = await communicator.receive_output(TIMEOUT)
    assert closed == {"type": "websocket.close", "code": 4401}
    again, code = await _open(conversation.pk, created.raw)
    assert code == 4401
    await again.disconnect()


async def test_a_frame_sent_with_a_key_revoked_behind_the_sockets_back_closes_it():
    """A key revoked without the announcement (another deployment's database, a bulk update) is still
    caught at the next frame; a cancel stays allowed."""
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    created = await _personal(mia, "chat")
    communicator, code = await _open(conversation.pk, created.raw)
    assert code is None
    await database_sync_to_async(ApiKey.objects.filter(pk=created.key.pk).update)(revoked=True)
    await communicator.send_json_to({"type": "cancel"})  # stopping stays allowed
    assert (await communicator.receive_json_from(TIMEOUT))["data"]["code"] == "no_active_run"
    await communicator.send_json_to({"type": "resume", "after_seq": 0})
    closed = await communicator.receive_output(TIMEOUT)
    assert closed == {"type": "websocket.close", "code": 4401}
    await communicator.disconnect()


async def _conversation_and_chat_key_expiring_in(delay: timedelta):
    """Mia's conversation, and a chat key of hers whose expiry is then moved to ``delay`` from now."""
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    created = await _personal(mia, "chat", expires_at=timezone.now() + timedelta(minutes=5))
    await database_sync_to_async(
        lambda: ApiKey.objects.filter(pk=created.key.pk).update(expires_at=timezone.now() + delay)
    )()
    return conversation, created


async def test_an_expired_key_is_refused_on_the_websocket():
    conversation, created = await _conversation_and_chat_key_expiring_in(timedelta(seconds=-1))
    communicator, code = await _open(conversation.pk, created.raw)
    assert code == 4401
    await communicator.disconnect()


async def test_a_socket_open_when_its_key_expires_is_closed_without_a_frame():
    conversation, created = await _conversation_and_chat_key_expiring_in(timedelta(seconds=1.5))
    communicator, code = await _open(conversation.pk, created.raw)
    assert code is None
    # the client sends nothing: the expiry itself closes the socket, within 5 seconds
    closed = await communicator.receive_output(5)
    assert closed == {"type": "websocket.close", "code": 4401}


async def test_an_org_key_never_opens_a_conversation_of_another_organisation():
    acme, globex, _, ada = await _world()
    foreign = await database_sync_to_async(ConversationFactory)(organization=globex, user=ada)
    created = await database_sync_to_async(api_key_create)(
        name="bot", scopes=["chat"], organization=acme, actor=ada
    )
    communicator, code = await _open(foreign.pk, created.raw)
    assert code == 4403
    await communicator.disconnect()


async def test_an_org_key_never_opens_a_conversation_where_another_admin_made_its_service_user_a_member():
    acme, globex, _, ada = await _world()
    created = await database_sync_to_async(api_key_create)(
        name="bot", scopes=["chat"], organization=acme, actor=ada
    )
    service_user = created.key.user
    await database_sync_to_async(Membership.objects.create)(
        user=service_user, organization=globex, role=Role.ADMIN
    )
    foreign = await database_sync_to_async(ConversationFactory)(organization=globex, user=service_user)
    own = await database_sync_to_async(ConversationFactory)(organization=acme, user=service_user)
    communicator, code = await _open(foreign.pk, created.raw)
    assert code == 4403
    await communicator.disconnect()
    communicator, code = await _open(own.pk, created.raw)
    assert code is None
    await communicator.disconnect()


@override_settings(API_KEY_FAILURES_PER_ADDRESS=2)
async def test_wrong_keys_on_the_handshake_are_throttled_by_address():
    acme, _, mia, _ = await _world()
    conversation = await database_sync_to_async(ConversationFactory)(organization=acme, user=mia)
    good = await _personal(mia, "chat")
    wrong = "apt_" + "x" * 43
    for _ in range(2):
        communicator, code = await _open(conversation.pk, wrong, client=("198.51.100.9", 1))
        assert code == 4401
        await communicator.disconnect()
    communicator, code = await _open(conversation.pk, good.raw, client=("198.51.100.9", 1))
    assert code == 4429
    await communicator.disconnect()
    communicator, code = await _open(conversation.pk, good.raw, client=("198.51.100.10", 1))
    assert code is None
    await communicator.disconnect()
