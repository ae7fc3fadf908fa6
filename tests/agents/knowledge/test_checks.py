"""The start-up check: a database without vector search is one warning saying what to do; a database
with it (SQLite in the process, PostgreSQL with pgvector) says nothing."""

from __future__ import annotations

import pytest
from django.core.checks import Tags, run_checks

from agents.knowledge.checks import CHECK_ID
from agents.knowledge.vector_index import Unavailable, vector_backend

pytestmark = pytest.mark.django_db


def test_the_database_checks_warn_only_when_the_database_cannot_search_vectors():
    found = [m for m in run_checks(tags=[Tags.database], databases=["default"]) if m.id == CHECK_ID]

    backend = vector_backend(fresh=True)
    if isinstance(backend, Unavailable):  # the system PostgreSQL, without pgvector
        (warning,) = found
        assert "pgvector" in warning.msg and "knowledge_vectors_enable" in warning.msg
    else:
        assert found == []


def test_the_check_says_nothing_when_the_databases_are_not_checked():
    assert [m for m in run_checks(tags=[Tags.database]) if m.id == CHECK_ID] == []
