"""PostgreSQL's stored ``tsvector`` of a passage's terms without their positions (``strip``): keyword
search weighs which terms a passage holds, never where, and the vector without positions is small enough
to stay in the passage's row, so weighing a few thousand passages reads no TOAST. The GIN index is made
again over it. SQLite keeps its FTS5 table (migration 0013)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

FORWARD = (
    "DROP INDEX IF EXISTS agents_chunk_terms_tsv",
    "ALTER TABLE agents_chunk DROP COLUMN IF EXISTS terms_tsv",
    "ALTER TABLE agents_chunk ADD COLUMN terms_tsv tsvector "
    "GENERATED ALWAYS AS (strip(to_tsvector('simple'::regconfig, terms))) STORED",
    "CREATE INDEX agents_chunk_terms_tsv ON agents_chunk USING gin (terms_tsv)",
)
BACKWARD = (
    "DROP INDEX IF EXISTS agents_chunk_terms_tsv",
    "ALTER TABLE agents_chunk DROP COLUMN IF EXISTS terms_tsv",
    "ALTER TABLE agents_chunk ADD COLUMN terms_tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, terms)) STORED",
    "CREATE INDEX agents_chunk_terms_tsv ON agents_chunk USING gin (terms_tsv)",
)


def _on_postgres(statements: tuple[str, ...]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("agents", "0017_knowledge_document_terms")]

    operations = [migrations.RunPython(_on_postgres(FORWARD), _on_postgres(BACKWARD))]
