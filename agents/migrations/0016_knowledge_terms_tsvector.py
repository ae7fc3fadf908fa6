"""PostgreSQL's keyword index as a stored ``tsvector`` column (generated from ``terms``) with its GIN
index, instead of an index on the expression: the search reads each passage's vector once instead of
parsing its terms again for every question term it weighs (:mod:`agents.knowledge.keyword_index`).
SQLite keeps its FTS5 table (migration 0013)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

FORWARD = (
    "ALTER TABLE agents_chunk ADD COLUMN terms_tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, terms)) STORED",
    "CREATE INDEX agents_chunk_terms_tsv ON agents_chunk USING gin (terms_tsv)",
    "DROP INDEX IF EXISTS agents_chunk_terms_fts",
)
BACKWARD = (
    "CREATE INDEX IF NOT EXISTS agents_chunk_terms_fts ON agents_chunk "
    "USING gin (to_tsvector('simple'::regconfig, terms))",
    "DROP INDEX IF EXISTS agents_chunk_terms_tsv",
    "ALTER TABLE agents_chunk DROP COLUMN IF EXISTS terms_tsv",
)


def _on_postgres(statements: tuple[str, ...]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("agents", "0015_knowledge_embedding_usage_and_source_urls")]

    operations = [migrations.RunPython(_on_postgres(FORWARD), _on_postgres(BACKWARD))]
