"""Loaded with ``-p tests.xdist_isolation`` (pyproject's addopts), before pytest-django reads the settings.

Under pytest-xdist every worker has its own test database (pytest-django adds the worker's suffix), but
a Redis URL names one Redis database for all of them: cache entries, budget counters, rate-limit windows
and the multi-process tests' broker would then cross between workers (whose databases hand out the same
ids). Each worker gets a Redis database of its own instead (``gw0`` keeps the given ones): the next number
after ``REDIS_URL``'s, and the one before the multi-process tests' (``PROD_TEST_REDIS_URL``, default 13).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16  # Redis' default `databases` setting


def worker_index() -> int:
    """The xdist worker's number (``gw3`` → 3); 0 outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else 0


def redis_url_for_worker(url: str, index: int) -> str:
    """``url`` with its database number moved up by ``index`` (wrapping at Redis' 16 databases)."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + index) % REDIS_DATABASES}"))


PROD_TEST_REDIS_URL = "redis://127.0.0.1:6379/13"  # tests/production/conftest.py's default

if worker_index():
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = redis_url_for_worker(os.environ["REDIS_URL"], worker_index())
    prod = os.environ.get("PROD_TEST_REDIS_URL", PROD_TEST_REDIS_URL)
    os.environ["PROD_TEST_REDIS_URL"] = redis_url_for_worker(prod, -worker_index())
