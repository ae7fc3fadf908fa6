"""The watch of a streaming API key: the revocation's announcement ends it at once, the key's expiry at
that moment, and the periodic re-read catches a revocation the announcement never reached."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from platform_core.identity.api_keys.keys import api_key_create, api_key_revoke
from platform_core.identity.api_keys.watch import KeyLapsed, KeyWatch, key_lapse, until_key_lapses
from platform_core.models import ApiKey, Role
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _key(expires_in: float | None = None):
    mia = member_of(OrganizationFactory(slug="acme"), Role.MEMBER, username="mia")
    expires_at = timezone.now() + timedelta(seconds=expires_in) if expires_in else None
    return api_key_create(name="k", scopes=["chat"], owner=mia, actor=mia, expires_at=expires_at).key


async def test_the_revocations_announcement_ends_the_watch_at_once(settings):
    settings.API_KEY_RECHECK_SECONDS = 60  # only the announcement can end it within the test
    key = await _key()
    watching = asyncio.ensure_future(key_lapse(KeyWatch(key.pk)))
    await asyncio.sleep(0.2)  # the watch has joined the key's group
    assert not watching.done()

    await database_sync_to_async(api_key_revoke)(key=key, actor=None)

    lapsed = await asyncio.wait_for(watching, 2)
    assert lapsed == KeyLapsed(key.pk, "revoked") and lapsed.code == "api_key_revoked"


async def test_a_revocation_the_announcement_never_reached_is_caught_by_the_re_read(settings):
    settings.API_KEY_RECHECK_SECONDS = 0.3
    key = await _key()
    watching = asyncio.ensure_future(key_lapse(KeyWatch(key.pk)))
    await asyncio.sleep(0.2)

    await database_sync_to_async(ApiKey.objects.filter(pk=key.pk).update)(revoked=True)  # a bulk update

    assert (await asyncio.wait_for(watching, 2)).reason == "revoked"


async def test_the_watch_ends_at_the_keys_expiry(settings):
    settings.API_KEY_RECHECK_SECONDS = 60
    key = await _key(expires_in=0.6)
    started = time.monotonic()

    lapsed = await asyncio.wait_for(key_lapse(KeyWatch(key.pk, key.expires_at)), 3)

    assert lapsed.reason == "expired" and lapsed.code == "api_key_expired"
    assert time.monotonic() - started < 2


async def test_a_stream_ends_with_the_lapse_and_its_source_is_closed(settings):
    settings.API_KEY_RECHECK_SECONDS = 60
    key = await _key()
    closed = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.sleep(3600)  # a quiet run: nothing more comes
            yield 2
        finally:
            closed.set()

    seen: list[object] = []
    async for item in until_key_lapses(source(), KeyWatch(key.pk)):
        seen.append(item)
        if item == 1:
            await database_sync_to_async(api_key_revoke)(key=key, actor=None)

    assert seen == [1, KeyLapsed(key.pk, "revoked")]
    assert closed.is_set()


async def test_without_a_key_the_stream_is_passed_through():
    async def source() -> AsyncIterator[int]:
        for number in range(3):
            yield number

    assert [item async for item in until_key_lapses(source(), None)] == [0, 1, 2]
