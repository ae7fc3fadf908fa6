"""Knowledge-base steps of the multi-process tests, in a process of their own on the database named by
``DATABASE_URL`` and with the settings of the environment (``MEDIA_ROOT``, ``KNOWLEDGE_*``):

    python -m tests.production.knowledge_world --queue Q

It sets Django up once (seconds), prints ``{"ready": true}``, then runs one step for each JSON line on
its input and prints the step's result as one JSON line:

- ``{"step": "upload", "org": SLUG, "name": NAME, "pages": N}`` creates a knowledge base in the
  organisation and uploads a generated PDF of ``N`` pages to it through the platform's service (which
  queues its ingestion);
- ``{"step": "sweep"}`` runs the documents' sweeper as beat's task runs it (it queues again what a dead
  worker left, or fails it).

Its Celery tasks go to the queue ``Q``, which the tests' own workers consume, and no other worker does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from tests.fakes.documents import pdf_with_pages


def long_pdf_pages(pages: int) -> list[str]:
    """The text of each page of the generated PDF: a line naming the page (``page0042``), then a ledger."""
    return [
        f"Ledger page{number:04d}\n"
        + "\n".join(
            f"Entry {line} of page {number}: the supplier invoice is checked against its order and paid."
            for line in range(40)
        )
        for number in range(1, pages + 1)
    ]


def upload(*, org: str, name: str, pages: int) -> dict[str, Any]:
    from django.core.files.base import ContentFile

    from agents.knowledge.services import DocumentQueued, document_upload, knowledge_base_create
    from platform_core.models import Organization

    organization = Organization.objects.get(slug=org)
    knowledge_base = knowledge_base_create(organization=organization, name=name, actor=None)
    content = ContentFile(pdf_with_pages(long_pdf_pages(pages)), name=f"{name}.pdf")
    uploaded = document_upload(
        knowledge_base=knowledge_base, name=f"{name}.pdf", content=content, uploaded_by=None
    )
    assert isinstance(uploaded, DocumentQueued), uploaded
    return {"knowledge_base": str(knowledge_base.pk), "document": str(uploaded.document.pk)}


def sweep() -> dict[str, Any]:
    from agents.knowledge.tasks import sweep_documents

    return sweep_documents()


STEPS: dict[str, Callable[..., dict[str, Any]]] = {"upload": upload, "sweep": sweep}


def main() -> None:
    import django

    parser = argparse.ArgumentParser()
    parser.add_argument("--queue", required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    django.setup()
    from platform_core.wiring.celery import app

    app.conf.task_default_queue = args.queue
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        print(json.dumps(STEPS[command.pop("step")](**command)), flush=True)


if __name__ == "__main__":
    main()
