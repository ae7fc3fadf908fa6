"""Two daphne servers and a Celery worker on PostgreSQL and Redis, started the way ``make prod`` starts them.

One stack per test session: a scratch PostgreSQL database (created, migrated once, dropped at the end),
a Redis database of its own (flushed before and after; ``PROD_TEST_REDIS_URL``, default DB 13), the
session's scripted LLM as the organisation's model endpoint, the fake Feishu server and a loopback ERP.
The servers re-check a waiting approval (and a streaming API key) only every 60 seconds, so a run that
wakes sooner (a stream that closes sooner) was woken by the Redis channel layer, across processes.

These tests need PostgreSQL and Redis (``PROD_TEST_POSTGRES_URL``, default the local server): they are
skipped with the reason when either is unreachable, and fail instead under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from platform_core.wiring.deploy.services import (
    postgres_database_drop,
    postgres_database_ensure,
    postgres_problem,
    redis_flush,
    redis_problem,
    with_database,
)
from platform_core.wiring.deploy.stack import ProcessGroup, daphne_spec, inherited_env, worker_spec
from tests.fakes.feishu_server import FakeFeishu
from tests.fakes.http_service import LoopbackHTTPService, running_http_service
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.production.processes import free_port, run_checked, unavailable

POSTGRES_URL = os.environ.get("PROD_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("PROD_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
# The deployment's own variables of the test process (CI points them at its services) must not leak in.
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


@dataclass
class Stack:
    """The running deployment: servers ``a`` and ``b`` (base URLs), the world's ids and tokens."""

    a: str
    b: str
    world: dict[str, str]
    group: ProcessGroup
    database_url: str

    def api(self, base_url: str, token: str) -> httpx.AsyncClient:
        """A REST client of one server, authenticated with a Bearer token."""
        return httpx.AsyncClient(
            base_url=f"{base_url}/api/v1/orgs/{self.world['org']}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=20,
            trust_env=False,
        )

    async def new_conversation(self) -> str:
        """A fresh conversation of the requester with the purchasing agent (created through server A)."""
        async with self.api(self.a, self.world["requester_token"]) as api:
            response = await api.post("/conversations/", json={"agent": self.world["agent"]})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def feishu_callback_url(self, base_url: str) -> str:
        return f"{base_url}/integrations/feishu/{self.world['channel']}/callback/"


@pytest.fixture(scope="session")
def prod_erp() -> Iterator[LoopbackHTTPService]:
    """The ERP the connector calls (records every request)."""
    with running_http_service() as service:
        yield service


@pytest.fixture(scope="session")
def prod_stack(
    scripted_llm_server: ScriptedOpenAIServer,
    fake_feishu_server: FakeFeishu,
    prod_erp: LoopbackHTTPService,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    problem = postgres_problem(POSTGRES_URL) or redis_problem(REDIS_URL)
    if problem:
        unavailable("multi-process tests", problem)
    database_url = with_database(POSTGRES_URL, f"agent_platform_prodtest_{uuid.uuid4().hex[:8]}")
    postgres_database_ensure(database_url)
    redis_flush(REDIS_URL)
    env = inherited_env()
    for name in SERVICE_VARIABLES:
        env.pop(name, None)
    env.update(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": REDIS_URL,
            "DJANGO_ENV": "development",
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "APPROVAL_RECHECK_SECONDS": "60",
            "API_KEY_RECHECK_SECONDS": "60",  # a stream closed sooner was closed by the Redis announcement
        }
    )
    log_dir: Path = tmp_path_factory.mktemp("production")
    group = ProcessGroup(env=env, log_dir=log_dir)
    try:
        run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
        out = run_checked(
            [
                sys.executable,
                "-m",
                "tests.production.world",
                "--llm",
                scripted_llm_server.base_url,
                "--erp",
                prod_erp.base_url,
                "--feishu",
                fake_feishu_server.base_url,
            ],
            env,
            "world setup",
        )
        world: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        a, b = group.start(daphne_spec(free_port())), group.start(daphne_spec(free_port()))
        group.start(worker_spec(concurrency=1))
        group.wait_ready(timeout=60)
        yield Stack(
            a=str(a.spec.base_url),
            b=str(b.spec.base_url),
            world=world,
            group=group,
            database_url=database_url,
        )
    finally:
        group.stop()
        postgres_database_drop(database_url)
        redis_flush(REDIS_URL)


@pytest.fixture
def stack(prod_stack: Stack) -> Stack:
    """The session's stack, with every process still alive."""
    prod_stack.group.check_alive()
    return prod_stack
