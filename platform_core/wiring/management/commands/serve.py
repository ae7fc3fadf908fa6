"""Serve the platform locally: daphne on HOST:PORT plus a Celery worker with an embedded beat.

Used by ``make run``. Ctrl-C (or SIGTERM) stops every child process. In production run daphne,
the worker and beat as separate supervised processes instead (see the README's deployment section).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from platform_core.wiring.deploy.stack import ASGI_APPLICATION, daphne_websocket_args
from platform_core.wiring.deploy.stop_signals import StopSignals


def worker_command(bin_dir: str) -> list[str]:
    """The Celery worker with its embedded beat, as ``make run`` starts it.

    ``--quiet`` leaves out Celery's start-up banner; at INFO the worker still says when it is ready and
    what its tasks do, while beat's routine ticks stay silent (``platform_core.log_filters``).
    """
    return [
        os.path.join(bin_dir, "celery"),
        "-A",
        "platform_core",
        "--quiet",
        "worker",
        "--beat",
        "--loglevel",
        "INFO",
        "--concurrency",
        "2",
        "--without-gossip",
        "--without-mingle",
    ]


class Command(BaseCommand):
    help = "Run daphne and a Celery worker (with beat) together until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="serve HTTP and websockets only")

    def handle(self, *args: Any, host: str, port: int, no_worker: bool, **options: Any) -> None:
        bin_dir = os.path.dirname(sys.executable)
        children: list[subprocess.Popen[bytes]] = []
        if not no_worker:
            children.append(subprocess.Popen(worker_command(bin_dir)))
        children.append(
            subprocess.Popen(
                [
                    os.path.join(bin_dir, "daphne"),
                    "-b",
                    host,
                    "-p",
                    str(port),
                    *daphne_websocket_args(),
                    ASGI_APPLICATION,
                ]
            )
        )
        self.stdout.write(self.style.SUCCESS(f"Serving on http://{host}:{port}/ (Ctrl-C to stop)"))

        stop = StopSignals().install()
        try:
            while not stop.received and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, None) and not stop.received]
        if failed:
            raise SystemExit(f"a platform process exited unexpectedly (exit code {failed[0].returncode})")
