"""Celery tasks run at once in the calling thread, for the tests that check what a task did without a
broker or a worker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from platform_core import celery_app


@contextmanager
def tasks_run_eagerly(*, propagate: bool = False) -> Iterator[None]:
    """``task_always_eager`` on (and ``task_eager_propagates`` as ``propagate`` says) inside the block,
    the previous settings back after it."""
    conf = celery_app.conf
    saved = (conf.task_always_eager, conf.task_eager_propagates)
    conf.task_always_eager, conf.task_eager_propagates = True, propagate
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = saved
