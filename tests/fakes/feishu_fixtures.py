"""Pytest plugin: the fake Feishu server (FEISHU.md section 6).

Fixtures: ``fake_feishu_server`` (one :class:`FakeFeishu` per session) and ``fake_feishu`` (the same
server, reset for every test, with the Feishu client's token cache cleared so no token leaks from
one test into the next). ``fake_feishu.app`` is a :class:`hooks.feishu.client.FeishuApp` pointing
at the server; the callback secrets the fake signs with by default are ``FAKE_ENCRYPT_KEY`` and
``FAKE_VERIFICATION_TOKEN`` from :mod:`tests.fakes.feishu_server`.

The fake listens on loopback, which the SSRF guard refuses for Feishu channels: the plugin allows
``127.0.0.1`` the way an operator would, through ``FEISHU_ALLOWED_PRIVATE_HOSTS`` (in this process and,
through the environment, in the servers the end-to-end tests start). Tests of the guard override it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.test import override_settings

from hooks.feishu.client import clear_token_cache
from tests.fakes.feishu_server import FakeFeishu
from tests.fakes.threaded_server import reset_around

LOOPBACK_ALLOWED = ["127.0.0.1"]


def pytest_configure(config: pytest.Config) -> None:
    os.environ["FEISHU_ALLOWED_PRIVATE_HOSTS"] = ",".join(LOOPBACK_ALLOWED)


@pytest.fixture(autouse=True, scope="session")
def _feishu_may_reach_loopback() -> Iterator[None]:
    """The operator's allowance for the fake (settings were read before the plugin ran)."""
    with override_settings(FEISHU_ALLOWED_PRIVATE_HOSTS=LOOPBACK_ALLOWED):
        yield


@pytest.fixture(scope="session")
def fake_feishu_server() -> Iterator[FakeFeishu]:
    """The session's fake Feishu (prefer ``fake_feishu``, which is reset per test)."""
    with FakeFeishu() as server:
        yield server


@pytest.fixture
def fake_feishu(fake_feishu_server: FakeFeishu) -> Iterator[FakeFeishu]:
    """The fake Feishu server, empty and with every fault off at the start of the test."""
    clear_token_cache()
    try:
        yield from reset_around(fake_feishu_server)
    finally:
        clear_token_cache()
