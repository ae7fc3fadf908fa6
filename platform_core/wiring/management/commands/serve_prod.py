"""Serve the platform as a multi-process deployment on one machine (``make prod``).

Creates the PostgreSQL database named by ``DATABASE_URL`` if it is missing, migrates it (and collects
static files when ``DJANGO_ENV=production``), optionally seeds the demo organisation, then starts two
daphne servers (``--ports``), one Celery worker and one Celery beat against PostgreSQL and Redis, and
supervises them: Ctrl-C or SIGTERM stops every process; a process that dies stops the rest.

In a real deployment a process manager (systemd, Kubernetes, supervisord) runs the same commands, one
unit per process, behind a load balancer; the README's deployment section lists them.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_core.wiring.deploy.services import (
    is_postgres_url,
    postgres_database_ensure,
    postgres_problem,
    redis_problem,
)
from platform_core.wiring.deploy.stack import (
    ProcessDied,
    ProcessGroup,
    beat_spec,
    daphne_spec,
    inherited_env,
    worker_spec,
)
from platform_core.wiring.deploy.stop_signals import StopSignals


def _ports(value: str) -> list[int]:
    try:
        ports = [int(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise CommandError(f"--ports must be comma-separated port numbers, not {value!r}") from exc
    if not ports or len(set(ports)) != len(ports):
        raise CommandError("--ports needs at least one port and no port twice")
    return ports


class Command(BaseCommand):
    help = "Migrate, then run daphne servers, a Celery worker and beat on PostgreSQL and Redis until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--ports", default="8001,8002", help="one daphne server per port")
        parser.add_argument("--worker-concurrency", type=int, default=2)
        parser.add_argument("--no-worker", action="store_true", help="no Celery worker")
        parser.add_argument(
            "--no-beat", action="store_true", help="no Celery beat (run exactly one per site)"
        )
        parser.add_argument("--seed-demo", action="store_true", help="create the demo organisation first")

    def handle(self, *args: Any, **options: Any) -> None:
        ports = _ports(options["ports"])
        self._check_services()
        self._prepare(seed_demo=options["seed_demo"], host=options["host"], port=ports[0])

        group = ProcessGroup(env=inherited_env())
        for port in ports:
            group.start(daphne_spec(port, host=options["host"]))
        if not options["no_worker"]:
            group.start(worker_spec(concurrency=options["worker_concurrency"]))
        if not options["no_beat"]:
            group.start(beat_spec(schedule_file=settings.VAR_DIR / "celerybeat-schedule-prod"))

        stop = StopSignals().install()
        try:
            group.wait_ready(timeout=90)
            for port in ports:
                self.stdout.write(self.style.SUCCESS(f"Serving on http://{options['host']}:{port}/"))
            self.stdout.write(self.style.SUCCESS("Ctrl-C stops every process."))
            while not stop.received:
                group.check_alive()
                time.sleep(0.5)
        except ProcessDied as died:
            if not stop.received:
                raise CommandError(f"a platform process stopped unexpectedly: {died}") from None
        finally:
            group.stop()

    def _check_services(self) -> None:
        database_url = settings.DATABASE_URL
        if not is_postgres_url(database_url):
            raise CommandError("serve_prod needs DATABASE_URL=postgres://… (make prod sets a local default)")
        if not settings.REDIS_URL:
            raise CommandError("serve_prod needs REDIS_URL=redis://… (make prod sets a local default)")
        problem = postgres_problem(database_url) or redis_problem(settings.REDIS_URL)
        if problem:
            raise CommandError(problem)

    def _prepare(self, *, seed_demo: bool, host: str, port: int) -> None:
        if postgres_database_ensure(settings.DATABASE_URL):
            self.stdout.write(f"Created the database {settings.DATABASES['default']['NAME']!r}.")
        call_command("migrate", interactive=False, verbosity=1)
        if settings.PRODUCTION:
            call_command("collectstatic", interactive=False, verbosity=0)
        if seed_demo:
            if not settings.DEMO_API_BASE_URL:
                settings.DEMO_API_BASE_URL = f"http://{host}:{port}/demo-api"
            call_command("seed_demo")
