"""The keyword index of knowledge-base passages, in each database's own full-text search.

SQLite: an FTS5 table over ``agents_chunk.terms`` (external content, kept by triggers), ranked by BM25.
PostgreSQL: a GIN index on ``to_tsvector('simple', terms)``, ranked by ``ts_rank_cd``. The terms are
already segmented (jieba for Chinese) and normalised by the platform, so both use their plainest
tokenizer: split on spaces, keep every term (:mod:`agents.knowledge.keyword_index`).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

SQLITE_CREATE = (
    "CREATE VIRTUAL TABLE agents_chunk_fts USING fts5("
    "terms, content='agents_chunk', content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER agents_chunk_fts_insert AFTER INSERT ON agents_chunk BEGIN "
    "INSERT INTO agents_chunk_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER agents_chunk_fts_delete AFTER DELETE ON agents_chunk BEGIN "
    "INSERT INTO agents_chunk_fts(agents_chunk_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
    "CREATE TRIGGER agents_chunk_fts_update AFTER UPDATE OF terms ON agents_chunk BEGIN "
    "INSERT INTO agents_chunk_fts(agents_chunk_fts, rowid, terms) VALUES ('delete', old.id, old.terms); "
    "INSERT INTO agents_chunk_fts(rowid, terms) VALUES (new.id, new.terms); END",
)
SQLITE_DROP = (
    "DROP TRIGGER IF EXISTS agents_chunk_fts_update",
    "DROP TRIGGER IF EXISTS agents_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS agents_chunk_fts_insert",
    "DROP TABLE IF EXISTS agents_chunk_fts",
)
POSTGRES_CREATE = (
    "CREATE INDEX agents_chunk_terms_fts ON agents_chunk USING gin (to_tsvector('simple'::regconfig, terms))",
)
POSTGRES_DROP = ("DROP INDEX IF EXISTS agents_chunk_terms_fts",)


def _run(statements: dict[str, tuple[str, ...]]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("agents", "0012_knowledge_bases")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_CREATE, "postgresql": POSTGRES_CREATE}),
            _run({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}),
        ),
    ]
