"""``manage.py knowledge_vectors_enable``: semantic search on a PostgreSQL database that was migrated before
pgvector was installed (``agents.knowledge.vector_index.pgvector_enable``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS

from agents.knowledge.vector_index import PgVector, Unavailable, pgvector_enable


class Command(BaseCommand):
    help = (
        "Create the pgvector extension if this role may, add the passages' vector column, fill it from the "
        "stored vectors and index each dimension. Safe to run again. Fails, saying who must act, when the "
        "extension cannot be had."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database", default=DEFAULT_DB_ALIAS, help="The database alias (default: default)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        backend = pgvector_enable(using=options["database"])
        if isinstance(backend, Unavailable):
            raise CommandError(backend.reason)
        if isinstance(backend, PgVector):
            self.stdout.write(f"vector search: pgvector {backend.version}")
        else:
            self.stdout.write("vector search: in the process (SQLite)")
