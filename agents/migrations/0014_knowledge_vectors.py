"""The vectors of knowledge-base passages (:class:`~agents.knowledge.models.ChunkVector`), on every database.

Every database keeps each vector as float32 bytes. On PostgreSQL with pgvector the table also gets an
``embedding vector`` column (no fixed dimension: knowledge bases may use different embedding models; the
HNSW index of each dimension is made when its first vectors are stored, ``agents.knowledge.vector_index``).
The extension is created here when the server has it and the migrating role may create it; otherwise
nothing is added, vector search reports why (``vector_backend()``), and ``manage.py
knowledge_vectors_enable`` adds the column and fills it from the stored bytes once pgvector is installed.
"""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
import django.db.models.manager
from django.db import DatabaseError, migrations, models, transaction


def pgvector_column(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return  # the server has no pgvector package
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except DatabaseError:
        return  # this role may not create it: a superuser can, then knowledge_vectors_enable adds the column
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE agents_chunkvector ADD COLUMN IF NOT EXISTS embedding vector")


def pgvector_column_drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("ALTER TABLE agents_chunkvector DROP COLUMN IF EXISTS embedding")


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0013_knowledge_keyword_index"),
        ("platform_core", "0011_django_reads_through_a_plain_manager"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChunkVector",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("dimension", models.PositiveSmallIntegerField(verbose_name="dimension")),
                ("data", models.BinaryField(verbose_name="vector")),
                (
                    "chunk",
                    models.OneToOneField(
                        editable=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="vector",
                        to="agents.chunk",
                        verbose_name="passage",
                    ),
                ),
                (
                    "knowledge_base",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="agents.knowledgebase",
                        verbose_name="knowledge base",
                    ),
                ),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="platform_core.organization",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "passage vector",
                "verbose_name_plural": "passage vectors",
                "indexes": [
                    models.Index(
                        fields=["knowledge_base", "organization", "dimension", "id"],
                        name="agents_chunkvector_version",
                    )
                ],
            },
            managers=[
                ("all_organizations", django.db.models.manager.Manager()),
            ],
        ),
        migrations.RunPython(pgvector_column, pgvector_column_drop),
    ]
