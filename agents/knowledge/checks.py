"""The start-up check of knowledge bases: a PostgreSQL without pgvector is said once, with what to do.

Registered for the database checks, which ``manage.py migrate`` runs (``make run`` and ``serve_prod``
start with it) and ``manage.py check --database default`` runs on demand. A warning, never an error: the
platform works without vector search, knowledge bases are searched by keyword meanwhile.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import DatabaseError

from agents.knowledge.vector_index import Unavailable, vector_backend

CHECK_ID = "agents.knowledge.W001"


@register(Tags.database)
def vector_search_check(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A warning when the default database cannot search vectors, saying why and what to do."""
    if not databases or "default" not in databases:
        return []
    try:
        backend = vector_backend(fresh=True)
    except DatabaseError:
        return []  # the database is not there yet (a first migrate): nothing to say
    if isinstance(backend, Unavailable):
        return [CheckWarning(backend.reason, id=CHECK_ID)]
    return []
