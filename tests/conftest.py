"""Fixtures shared by the whole suite: organisations, users by role, API clients."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.core.cache import cache
from django.utils import translation
from rest_framework.test import APIClient

from platform_core import celery_app
from platform_core.config_cache import config_cache_forget
from platform_core.models import ApiKey, ApiKeyAddress, Role
from tests.factories import OrganizationFactory, member_of

pytest_plugins = ["tests.fakes.llm_fixtures", "tests.fakes.feishu_fixtures", "tests.fakes.dns"]

_BROKER_FOLDER = pytest.StashKey[Path]()


# What a test needs to depend on the services the environment names (DATABASE_URL, REDIS_URL): Django's
# test database (these fixtures, directly or through others such as ``org``) or the ``services`` marker.
SERVICE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--service-dependent-only",
        action="store_true",
        help="run only the tests whose outcome can depend on the database, cache, channel layer or broker "
        "that DATABASE_URL and REDIS_URL name (CI's second pass, on PostgreSQL and Redis)",
    )


def depends_on_services(item: pytest.Item) -> bool:
    """Whether ``item`` uses Django's database or is marked ``services`` (the cache, channel layer or
    broker of the settings). Every other test (the Django-free engine, the SQL guards and adapters, which
    connect to their own servers, the multi-process tests, which start their own) runs the same whatever
    the environment names."""
    if item.get_closest_marker("django_db") or item.get_closest_marker("services"):
        return True
    return not SERVICE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--service-dependent-only``, keep only the tests :func:`depends_on_services`.

    Run the multi-process tests first (the longest) and the browser tests last: Playwright's sync API
    keeps an event loop running in the main thread while its browser is open, and no asyncio test can run
    beside it in the same process. Under pytest-xdist each worker runs its share in this order too."""
    if config.getoption("service_dependent_only"):
        independent = [item for item in items if not depends_on_services(item)]
        if independent:
            config.hook.pytest_deselected(items=independent)
            items[:] = [item for item in items if depends_on_services(item)]
    items.sort(
        key=lambda item: (item.get_closest_marker("e2e") is not None, "tests/production/" not in item.nodeid)
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cross_org(*route_names): this test proves that the named tenant routes hide other organisations' data",
    )
    config.stash[_BROKER_FOLDER] = _broker_of_the_tests()


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_BROKER_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _broker_of_the_tests() -> Path:
    """Tests never write into the developer's broker (the checkout's var/celery, or the Redis of REDIS_URL),
    where ``make run`` would pick their messages up: the tasks they send go to a file-system broker in a
    folder of the session, outside the checkout, and so do those of the servers they start (which inherit
    the environment; Celery reads ``CELERY_BROKER_URL`` from it before its configuration)."""
    folder = Path(tempfile.mkdtemp(prefix="tests-celery-broker-"))
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir()
    os.environ["CELERY_BROKER_URL"] = "filesystem://"
    os.environ["CELERY_FILESYSTEM_FOLDER"] = str(folder)
    celery_app.conf.broker_url = "filesystem://"
    celery_app.conf.broker_transport_options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    return folder


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    """Passwords set in this process are hashed with MD5, not PBKDF2's million rounds (0.4 s a user here,
    minutes over the suite: Django's "Speeding up the tests"). PBKDF2 stays accepted, so hashes made by
    the stacks the tests start (their own processes, the real settings) still verify here. Nothing the
    platform ships changes: this is the test process's settings only."""
    from django.conf import settings
    from django.test import override_settings

    hashers = ["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=hashers):
        yield


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
    throttle a later test (``platform_core.identity.api_keys.throttle`` counts them per address in the cache)."""
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
