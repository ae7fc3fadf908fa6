"""Start, watch and stop the platform's processes: daphne servers, a Celery worker and Celery beat.

:class:`ProcessGroup` starts each process with one shared environment (the database and Redis URLs are
what make separate processes one platform), waits until the daphne servers answer HTTP, reports a
process that died, and stops everything: SIGTERM first (daphne closes its sockets, the worker finishes
its task), SIGKILL for whatever is still alive after the grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

# The directory that holds the platform's packages (platform_core/wiring/deploy/ is three levels down): the
# project checkout, or site-packages for an installed wheel. Processes start there.
ROOT = Path(__file__).resolve().parents[3]
ASGI_APPLICATION = "platform_core.wiring.asgi:application"
READY_PATH = "/login/"
# The largest websocket message daphne accepts (its default is 1 MiB; above it the connection drops). The
# consumer refuses frames above its own, far lower limit (agents.ws_frames.MAX_FRAME_BYTES) with an error
# frame and keeps the socket open; this limit only caps the memory one message can take.
WEBSOCKET_TRANSPORT_MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """One process to start: its name, its command line and, for servers, where they answer."""

    name: str
    argv: tuple[str, ...]
    base_url: str | None = None

    @property
    def ready_url(self) -> str | None:
        """The page a server answers once it is up."""
        return None if self.base_url is None else self.base_url + READY_PATH


def daphne_spec(port: int, *, host: str = "127.0.0.1", name: str | None = None) -> ProcessSpec:
    """A daphne server for HTTP and websockets on ``host:port``."""
    argv = (
        sys.executable,
        "-m",
        "daphne",
        "-b",
        host,
        "-p",
        str(port),
        # Sockets the client left without a close frame are noticed within a minute.
        "--ping-interval",
        "20",
        "--ping-timeout",
        "30",
        *daphne_websocket_args(),
        ASGI_APPLICATION,
    )
    return ProcessSpec(name or f"daphne:{port}", argv, f"http://{host}:{port}")


def daphne_websocket_args() -> tuple[str, ...]:
    """daphne's websocket size limits, the same for every way the platform starts daphne."""
    size = str(WEBSOCKET_TRANSPORT_MAX_BYTES)
    return ("--websocket-max-message-size", size, "--websocket-max-frame-size", size)


def _celery(command: str) -> tuple[str, ...]:
    """The command line of the platform's Celery ``command`` (``worker``, ``beat``), logging at INFO."""
    return (sys.executable, "-m", "celery", "-A", "platform_core", command, "--loglevel", "INFO")


def worker_spec(*, concurrency: int = 2, name: str = "worker") -> ProcessSpec:
    """A Celery worker (card delivery, expiry and every other task)."""
    argv = (
        *_celery("worker"),
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
    )
    return ProcessSpec(name, argv)


def beat_spec(*, schedule_file: Path, name: str = "beat") -> ProcessSpec:
    """Celery beat, the one scheduler of the deployment (run exactly one)."""
    argv = (
        *_celery("beat"),
        "--schedule",
        str(schedule_file),
    )
    return ProcessSpec(name, argv)


@dataclass
class RunningProcess:
    """A started process and where its output goes (``None``: the supervisor's own terminal)."""

    spec: ProcessSpec
    popen: subprocess.Popen[bytes]
    log_path: Path | None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class ProcessDied(RuntimeError):
    """A process of the group exited while it should be running."""


@dataclass
class ProcessGroup:
    """Processes sharing one environment; stopped together.

    ``log_dir`` collects each process's output in ``<name>.log``; without it they write to the
    supervisor's terminal.
    """

    env: Mapping[str, str]
    log_dir: Path | None = None
    processes: list[RunningProcess] = field(default_factory=list)

    def start(self, spec: ProcessSpec) -> RunningProcess:
        log_path: Path | None = None
        output: IO[bytes] | None = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / f"{spec.name.replace(':', '-')}.log"
            output = log_path.open("ab")
        try:
            popen = subprocess.Popen(
                list(spec.argv),
                cwd=ROOT,
                env=dict(self.env),
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
            )
        finally:
            if output is not None:
                output.close()
        process = RunningProcess(spec, popen, log_path)
        self.processes.append(process)
        return process

    def get(self, name: str) -> RunningProcess:
        for process in self.processes:
            if process.spec.name == name:
                return process
        raise KeyError(name)

    def check_alive(self) -> None:
        """Raise :class:`ProcessDied` (with its last output) if a process has exited."""
        for process in self.processes:
            if not process.alive():
                raise ProcessDied(
                    f"{process.spec.name} exited with {process.popen.returncode}\n{process.log_tail()}"
                )

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until every server answers HTTP (any status below 500, redirects included)."""
        deadline = time.monotonic() + timeout
        for process in self.processes:
            url = process.spec.ready_url
            while url is not None:
                self.check_alive()
                status = _http_status(url)
                if status is not None and status < 500:
                    break
                if status is not None:
                    raise ProcessDied(f"{process.spec.name} answered {status}:\n{process.log_tail()}")
                if time.monotonic() > deadline:
                    raise ProcessDied(f"{process.spec.name} did not answer within {timeout:.0f} s")
                time.sleep(0.1)

    def kill(self, name: str) -> None:
        """SIGKILL one process (crash drills)."""
        process = self.get(name)
        if process.alive():
            process.popen.kill()
            process.popen.wait(timeout=10)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM every live process (servers first), then SIGKILL what outlives ``grace`` seconds."""
        ordered = sorted(self.processes, key=lambda p: p.spec.ready_url is None)
        for process in ordered:
            if process.alive():
                process.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in ordered:
            try:
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait(timeout=10)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def _http_status(url: str) -> int | None:
    try:
        with _opener.open(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None


def inherited_env(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides`` (the common base of every process of a group)."""
    env = dict(os.environ)
    env.update(overrides)
    env.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
