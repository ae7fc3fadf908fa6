"""The documents' term counts (keyword search's document frequencies), counted from the passages already
indexed."""

from collections import Counter
from typing import Any

import django.db.models.deletion
import django.db.models.manager
from django.db import migrations, models


MAX_COUNTED_TERM = 100


def count_terms(apps: Any, schema_editor: Any) -> None:
    Chunk = apps.get_model("agents", "Chunk")
    DocumentTerm = apps.get_model("agents", "DocumentTerm")
    documents = Chunk._default_manager.values_list("document_id", flat=True).distinct().order_by()
    for document_id in documents.iterator():
        counts: Counter[str] = Counter()
        owner = None
        for organization_id, knowledge_base_id, terms in Chunk._default_manager.filter(
            document_id=document_id
        ).values_list("organization_id", "knowledge_base_id", "terms"):
            owner = (organization_id, knowledge_base_id)
            counts.update({term for term in terms.split() if len(term) <= MAX_COUNTED_TERM})
        if owner is None:
            continue
        DocumentTerm._default_manager.bulk_create(
            [
                DocumentTerm(
                    organization_id=owner[0],
                    knowledge_base_id=owner[1],
                    document_id=document_id,
                    term=term,
                    passages=passages,
                )
                for term, passages in sorted(counts.items())
            ],
            batch_size=1000,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0016_knowledge_terms_tsvector"),
        ("platform_core", "0011_django_reads_through_a_plain_manager"),
    ]

    operations = [
        migrations.CreateModel(
            name="DocumentTerm",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("term", models.CharField(max_length=100, verbose_name="search term")),
                ("passages", models.PositiveIntegerField(verbose_name="passages")),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="term_counts",
                        to="agents.document",
                        verbose_name="document",
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
                "verbose_name": "document term",
                "verbose_name_plural": "document terms",
                "indexes": [
                    models.Index(
                        fields=["knowledge_base", "term"],
                        include=("organization", "document", "passages"),
                        name="agents_documentterm_lookup",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("document", "term"), name="agents_documentterm_unique")
                ],
            },
            managers=[
                ("all_organizations", django.db.models.manager.Manager()),
            ],
        ),
        migrations.RunPython(count_terms, migrations.RunPython.noop),
    ]
