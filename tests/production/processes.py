"""What the tests that run the platform in processes of their own share (the multi-process tests here and
the browser tests of ``tests/e2e``): skipping when a service is missing, a free loopback port, a checked
run of a command in the checkout, and the command line of a world-setup script."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import pytest

from platform_core.wiring.deploy.stack import ROOT


def unavailable(tests: str, reason: str) -> NoReturn:
    """Skip ``tests`` (e.g. "browser tests") for ``reason``; under ``CI=true`` fail instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{tests} cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill_tree(pid: int, within: float = 10.0) -> None:
    """SIGKILL the process ``pid`` and every process under it at once (a Celery worker and its pool's
    children, as the death of their machine or the OOM killer leaves them), then wait until none runs."""
    pids = _descendants(pid) + [pid]
    for each in pids:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + within
    while any(_running(each) for each in pids):
        assert time.monotonic() < deadline, f"processes {pids} outlived SIGKILL"
        time.sleep(0.05)


def _descendants(pid: int) -> list[int]:
    children: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as listing:
                children += [int(child) for child in listing.read().split()]
        except FileNotFoundError:
            continue
    return [each for child in children for each in (*_descendants(child), child)]


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def run_checked(args: list[str], env: Mapping[str, str], what: str) -> str:
    """Run ``args`` in the checkout with ``env``; its output, or a ``RuntimeError`` naming ``what``."""
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def world_main(build: Callable[..., dict[str, Any]], options: Mapping[str, str]) -> None:
    """A world-setup script's ``main``: read the required ``options`` (``--flag`` to ``build``'s keyword),
    set Django up on ``DATABASE_URL`` and print what ``build`` returns as one JSON line."""
    import django

    parser = argparse.ArgumentParser()
    for flag in options:
        parser.add_argument(flag, required=True)
    args = vars(parser.parse_args())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    print(json.dumps(build(**{keyword: args[flag.lstrip("-")] for flag, keyword in options.items()})))
