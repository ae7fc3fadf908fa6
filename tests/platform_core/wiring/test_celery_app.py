"""The Celery application as a worker loads it: every task the code can send is registered there.

A worker knows only the tasks its start-up imports (``celery -A platform_core worker``: the app, then
``loader.import_default_modules()``, which sets Django up and runs the autodiscovery); a message for any
other task is dropped with ``KeyError``. Tests that run tasks eagerly import the task modules themselves
and never notice, so this test asks a fresh process loaded the worker's way.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from celery.app.task import Task
from django.conf import settings

# The cache, channel layer or broker the settings name: CI's second pass (PostgreSQL + Redis) runs it too.
pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("agents", "connectors", "hooks", "platform_core")

# What `celery -A platform_core worker` does before it consumes: find the app, import the default modules
# (Django's setup, then every autodiscovered tasks module), finalize the app; then list its registry.
WORKER_STARTUP = """
import json
from celery.app.utils import find_app
app = find_app("platform_core")
app.loader.import_default_modules()
app.finalize(auto=True)
print(json.dumps(sorted(app.tasks)))
"""

SEND_TASK = re.compile(r"""send_task\(\s*["']([\w.]+)["']""")


def _modules() -> Iterator[ModuleType]:
    """Every module of the project's packages (the tests' packages aside)."""
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
            yield importlib.import_module(info.name)


def tasks_the_code_can_send() -> dict[str, str]:
    """Task name -> where it comes from: every task object of every module, every ``send_task("…")``
    name in the sources, every task of the beat schedule."""
    found: dict[str, str] = {}
    for module in _modules():
        for value in list(vars(module).values()):
            if isinstance(value, Task):
                found.setdefault(value.name, module.__name__)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for name in SEND_TASK.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(ROOT)))
    for entry, schedule in settings.CELERY_BEAT_SCHEDULE.items():
        found.setdefault(str(schedule["task"]), f"CELERY_BEAT_SCHEDULE[{entry!r}]")
    return found


def tasks_a_worker_registers() -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "platform_core.settings"}
    out = subprocess.run(
        [sys.executable, "-c", WORKER_STARTUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_a_worker_registers_every_task_the_code_can_send():
    # given every task the code defines, sends by name or schedules (the budget warning among them)
    expected = tasks_the_code_can_send()
    assert "agents.usage.tasks.notify_budget_warning" in expected
    assert "agents.tasks.sweep_runs" in expected

    # when a fresh process loads the Celery app as a worker does
    registered = tasks_a_worker_registers()

    # then the worker knows each of them: none of their messages would be dropped
    missing = {name: origin for name, origin in expected.items() if name not in registered}
    assert missing == {}


def _messages_in_folder(folder: Path, task_id: str) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.rglob("*") if p.is_file() and task_id.encode() in p.read_bytes()]


def _messages_in_redis(url: str, task_id: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return sum(
            1
            for key in client.scan_iter()
            if client.type(key) == b"list"
            for item in client.lrange(key, 0, -1)
            if task_id.encode() in item
        )
    finally:
        client.close()


def test_a_task_a_test_sends_goes_to_the_tests_broker_never_to_the_developers():
    """``make run`` after ``make test`` must not find the tests' messages: their broker is one of their own,
    neither the checkout's var/celery nor the Redis of REDIS_URL (the broker the settings name)."""
    from agents.usage.tasks import notify_budget_warning

    # given the checkout's broker folder as it is before
    checkout = ROOT / "var" / "celery"
    files_before = {p: p.stat().st_mtime_ns for p in checkout.rglob("*") if p.is_file()}

    # when a test sends a task (not eagerly)
    sent = notify_budget_warning.delay(
        budget_id="00000000000000000000000000000000", organization_id=0, period="2026-12", used=1
    )

    # then nothing was written to the checkout's var/celery, nor to the Redis broker of the settings
    assert {p: p.stat().st_mtime_ns for p in checkout.rglob("*") if p.is_file()} == files_before
    if settings.CELERY_BROKER_URL.startswith("redis"):
        assert _messages_in_redis(settings.CELERY_BROKER_URL, sent.id) == 0
    # but to the tests' own broker, outside the checkout
    tests_folder = Path(os.environ.get("CELERY_FILESYSTEM_FOLDER") or checkout)
    assert not tests_folder.resolve().is_relative_to(ROOT.resolve())
    assert _messages_in_folder(tests_folder, sent.id) != []
