"""Fixtures shared by the whole suite: organisations, users by role, API clients."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.utils import translation
from rest_framework.test import APIClient

from platform_core.config_cache import config_cache_forget
from platform_core.models import ApiKey, ApiKeyAddress, Role
from tests.factories import OrganizationFactory, member_of

pytest_plugins = ["tests.fakes.llm_fixtures", "tests.fakes.feishu_fixtures", "tests.fakes.dns"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests last: Playwright's sync API keeps an event loop running in the main thread
    while its browser is open, and no asyncio test can run beside it."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cross_org(*route_names): this test proves that the named tenant routes hide other organisations' data",
    )


@pytest.fixture(autouse=True)
def _default_language():
    """Every test starts in the default language. Django's LocaleMiddleware activates a request's
    language in the thread and never deactivates it, so a test client request with ``zh-hans`` would
    otherwise leave Chinese active for every later test of the same thread."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Every test starts with an empty cache: the wrong API keys one test sends from 127.0.0.1 must not
    throttle a later test (``platform_core.api_keys_throttle`` counts them per address in the cache)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def org(db):
    return OrganizationFactory(slug="acme", name="Acme")


@pytest.fixture
def other_org(db):
    return OrganizationFactory(slug="globex", name="Globex")


@pytest.fixture
def member(org):
    return member_of(org, Role.MEMBER, username="mia")


@pytest.fixture
def org_admin(org):
    return member_of(org, Role.ADMIN, username="ada")


@pytest.fixture
def org_owner(org):
    return member_of(org, Role.OWNER, username="oscar")


@pytest.fixture
def approver(org):
    return member_of(org, Role.APPROVER, username="april")


@pytest.fixture
def other_admin(other_org):
    return member_of(other_org, Role.ADMIN, username="gus")


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def client_for():
    """``client_for(user)``: an API client authenticated with a real personal API key of ``user`` (every
    scope), made without the audit rows of its creation and already in use from the test client's
    address, so tests see only the audit rows and queries of what they do."""

    def make(user):
        raw = ApiKey.new_raw()
        key = ApiKey.objects.create(
            user=user,
            name="test",
            key_prefix=raw[:12],
            key_hash=ApiKey.hash_raw(raw),
            last_used_ip="127.0.0.1",
        )
        ApiKeyAddress.objects.create(key=key, ip_address="127.0.0.1")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make


@pytest.fixture
def fresh_config_cache():
    """An empty per-process configuration cache before and after the test (tests that count the
    queries a cold or a warm cache costs)."""
    config_cache_forget()
    yield
    config_cache_forget()
