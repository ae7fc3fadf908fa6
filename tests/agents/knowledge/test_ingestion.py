"""A document's life in a knowledge base: uploaded, indexed in a worker, recognised when uploaded again,
replaced by a new version, re-indexed, deleted with everything it left; each bad file ends failed with a
reason an admin can act on, and a worker that dies mid-document loses nothing."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import override_settings
from django.utils import timezone
from django.utils.translation import override

from agents.knowledge import tasks
from agents.knowledge.failures import failure_message
from agents.knowledge.ingestion import NotToIngest, document_ingest, documents_sweep
from agents.knowledge.keyword_index import keyword_search
from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.services import (
    DocumentQueued,
    DocumentTooLarge,
    DocumentUnchanged,
    document_delete,
    document_reindex,
    document_upload,
    knowledge_base_delete,
)
from agents.knowledge.terms import search_terms
from platform_core.models import AuditLog
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.fakes.documents import docx_with_sections, pdf_with_pages

pytestmark = pytest.mark.django_db


def _xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Limits"
    sheet.append(["Role", "Limit (CNY)"])
    sheet.append(["Buyer", 10000])
    sheet.append(["Finance director", 50000])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _pptx() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Supplier checks"
    slide.placeholders[1].text = "Every new supplier shows its business licence."
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


FILES = {
    "policy.pdf": (pdf_with_pages(["Payments over 50,000 CNY need approval.", "Suppliers are checked."]), 2),
    "policy.docx": (docx_with_sections([("Approvals", ["Payments over 50,000 CNY need approval."])]), 1),
    "limits.xlsx": (_xlsx(), 1),
    "limits.csv": ("Role,Limit\nBuyer,10000\nFinance director,50000\n", 1),
    "checks.pptx": (_pptx(), 1),
    "policy.md": (POLICY_EN, 1),
    "policy.html": ("<h1>Policy</h1><p>Payments over 50,000 CNY need approval.</p>", 1),
    "policy.txt": (POLICY_ZH, 1),
}


def _chunk_ids(document: Document, words: str) -> list[int]:
    hits = keyword_search(
        organization_id=document.organization_id,
        knowledge_base_ids=[document.knowledge_base_id],
        terms=search_terms(words),
        limit=10,
    )
    return [hit.chunk_id for hit in hits]


@pytest.mark.parametrize("name", FILES)
def test_each_format_is_indexed_ready_with_its_pages_and_passages(org, org_admin, name):
    data, pages = FILES[name]
    document = indexed(knowledge_base_with(org, org_admin), name, data, org_admin)

    assert document.status == DocumentStatus.READY
    assert document.page_count == pages
    assert document.chunk_count == Chunk.objects.for_org(org).filter(document=document).count() > 0
    assert len(document.sha256) == 64 and document.size == len(
        data if isinstance(data, bytes) else data.encode()
    )
    assert document.indexed_at is not None and document.attempts == 1


def test_an_indexed_document_is_found_by_english_and_chinese_words(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    english = indexed(kb, "policy.md", POLICY_EN)
    chinese = indexed(kb, "政策.txt", POLICY_ZH)

    found = Chunk.objects.for_org(org).get(pk=_chunk_ids(english, "finance director approval")[0])
    assert found.document_id == english.pk and "50,000 CNY" in found.text
    assert found.heading_path == ["Purchasing policy", "Approvals"]
    found = Chunk.objects.for_org(org).get(pk=_chunk_ids(chinese, "财务总监审批")[0])
    assert found.document_id == chinese.pk and "五万元" in found.text


def _bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as package:
        package.writestr("word/document.xml", b"\0" * (20 * 1024 * 1024))
    return buffer.getvalue()


BAD_FILES = {
    "zip bomb named .docx": ("report.docx", _bomb(), "compression_too_high"),
    "a DOCX named .pdf": ("contract.pdf", docx_with_sections([("A", ["b"])]), "extension_mismatch"),
    "password-protected": ("secret.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "encrypted"),
    "malformed PDF": ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage", "malformed"),
    "broken package": ("sheet.xlsx", b"PK\x03\x04 not really a zip", "unreadable_package"),
    "binary named .txt": ("notes.txt", bytes(range(256)) * 4, "not_text"),
    "unknown extension": ("tool.exe", b"MZ\x90\x00", "unknown_format"),
    "empty text": ("empty.md", "   \n\n", "no_text"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_each_bad_file_ends_failed_with_a_reason_an_admin_can_act_on(org, org_admin, case):
    name, data, code = BAD_FILES[case]
    kb = knowledge_base_with(org, org_admin)
    content = ContentFile(data.encode() if isinstance(data, str) else data, name=name)
    uploaded = document_upload(knowledge_base=kb, name=name, content=content, uploaded_by=org_admin)
    assert isinstance(uploaded, DocumentQueued)

    document_ingest(uploaded.document.pk)
    document = Document.objects.for_org(org).get(pk=uploaded.document.pk)

    assert document.status == DocumentStatus.FAILED and document.failure_code == code
    assert document.chunk_count == 0 and not Chunk.objects.for_org(org).filter(document=document).exists()
    with override("en"):
        english = failure_message(document.failure_code, document.failure_figures)
    with override("zh-hans"):
        chinese = failure_message(document.failure_code, document.failure_figures)
    assert english and "Indexing failed (" not in english  # a message of its own, not the fallback
    assert chinese != english


def test_a_file_over_the_size_limit_is_refused_at_upload_and_nothing_is_stored(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    with override_settings(KNOWLEDGE_MAX_FILE_BYTES=100):
        uploaded = document_upload(
            knowledge_base=kb,
            name="big.txt",
            content=ContentFile(b"x" * 101, name="big.txt"),
            uploaded_by=None,
        )

    assert uploaded == DocumentTooLarge(size=101, limit=100)
    assert not Document.objects.for_org(org).exists()


def test_an_identical_file_is_recognised_under_its_name_or_another_and_stored_once(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    first = indexed(kb, "policy.md", POLICY_EN)

    again = document_upload(
        knowledge_base=kb, name="policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
    )
    renamed = document_upload(
        knowledge_base=kb, name="copy of policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
    )

    assert again == DocumentUnchanged(first) and renamed == DocumentUnchanged(first)
    assert Document.objects.for_org(org).count() == 1
    assert Document.objects.for_org(org).get().status == DocumentStatus.READY


def test_a_new_version_keeps_the_old_passages_searchable_until_it_replaces_them(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    old = indexed(kb, "policy.md", POLICY_EN)
    old_file = old.file.name

    uploaded = document_upload(
        knowledge_base=kb,
        name="policy.md",
        content=ContentFile(POLICY_EN.replace("50,000", "80,000").encode()),
        uploaded_by=None,
    )
    assert isinstance(uploaded, DocumentQueued) and uploaded.replaced
    assert _chunk_ids(old, "50000")  # the old version answers while the new one waits

    document_ingest(uploaded.document.pk)
    document = Document.objects.for_org(org).get(pk=old.pk)
    assert document.status == DocumentStatus.READY and document.version == 2
    assert _chunk_ids(document, "80000") and not _chunk_ids(document, "50000")
    assert document.file.name != old_file and default_storage.exists(document.file.name)


def test_an_ingestion_of_an_outdated_version_changes_nothing(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "policy.md", POLICY_EN)
    document_reindex(document=document, actor=org_admin)
    Document.objects.for_org(org).filter(pk=document.pk).update(version=document.version + 1)

    outcome = document_ingest(document.pk)

    # claimed at the newer version: it indexes that one; a task of the older one would find nothing to do
    assert not isinstance(outcome, NotToIngest)
    assert Document.objects.for_org(org).get(pk=document.pk).status == DocumentStatus.READY


def test_reindexing_indexes_the_stored_file_again_and_is_audited(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "policy.md", POLICY_EN)

    document = document_reindex(document=document, actor=org_admin)
    assert document.status == DocumentStatus.QUEUED
    document_ingest(document.pk)

    document.refresh_from_db()
    assert document.status == DocumentStatus.READY and _chunk_ids(document, "supplier licence")
    assert AuditLog.objects.filter(organization=org, action="document.reindexed").exists()


def test_deleting_a_document_removes_its_passages_their_index_entries_and_its_file(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "policy.md", POLICY_EN)
    kept = indexed(kb, "政策.txt", POLICY_ZH)
    stored = document.file.name

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.db.transaction.on_commit", lambda callback, *a, **k: callback())
        document_delete(document=document, actor=org_admin)

    assert not Chunk.objects.for_org(org).filter(document_id=document.pk).exists()
    assert not _chunk_ids(kept, "finance director supplier")  # nothing left in the index
    assert _chunk_ids(kept, "财务总监")
    assert not default_storage.exists(stored)


def test_deleting_a_knowledge_base_removes_its_connector_documents_and_files(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "policy.md", POLICY_EN)
    stored, connector_id = document.file.name, kb.connector_id

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.db.transaction.on_commit", lambda callback, *a, **k: callback())
        knowledge_base_delete(knowledge_base=kb, actor=org_admin)

    assert not Document.objects.for_org(org).exists() and not Chunk.objects.for_org(org).exists()
    from connectors.models import Connector

    assert not Connector.objects.for_org(org).filter(pk=connector_id).exists()
    assert not default_storage.exists(stored)


def test_a_document_left_mid_ingestion_by_a_dead_worker_is_queued_again_and_ends_ready(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    uploaded = document_upload(
        knowledge_base=kb, name="policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
    )
    assert isinstance(uploaded, DocumentQueued)
    # What a worker killed while parsing leaves: the row says "parsing", and nothing moves any more.
    Document.objects.for_org(org).filter(pk=uploaded.document.pk).update(
        status=DocumentStatus.PARSING, attempts=1, updated_at=timezone.now() - timedelta(hours=1)
    )
    queued: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.ingest_document, "delay", lambda document_id: queued.append(document_id))
        assert tasks.sweep_documents() == {"requeued": 1, "failed": 0}

    assert queued == [str(uploaded.document.pk)]
    assert tasks.ingest_document(queued[0]).startswith("indexed")
    document = Document.objects.for_org(org).get(pk=uploaded.document.pk)
    assert document.status == DocumentStatus.READY and document.attempts == 2


def test_a_document_that_stalls_every_attempt_fails_as_interrupted_instead_of_looping(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    uploaded = document_upload(
        knowledge_base=kb, name="policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
    )
    assert isinstance(uploaded, DocumentQueued)
    Document.objects.for_org(org).filter(pk=uploaded.document.pk).update(
        status=DocumentStatus.EMBEDDING, attempts=3, updated_at=timezone.now() - timedelta(hours=1)
    )

    report = documents_sweep()

    document = Document.objects.for_org(org).get(pk=uploaded.document.pk)
    assert report.failed == (document.pk,) and report.requeued == ()
    assert document.status == DocumentStatus.FAILED and document.failure_code == "interrupted"
    with override("en"):
        assert "interrupted 3 times" in failure_message(document.failure_code, document.failure_figures)


def test_a_recent_ingestion_in_progress_is_left_to_its_worker(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    uploaded = document_upload(
        knowledge_base=kb, name="policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
    )
    assert isinstance(uploaded, DocumentQueued)
    Document.objects.for_org(org).filter(pk=uploaded.document.pk).update(status=DocumentStatus.PARSING)

    assert documents_sweep().requeued == ()


def test_a_ready_or_failed_document_is_not_indexed_twice_by_a_repeated_task(org, org_admin):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)

    assert document_ingest(document.pk) == NotToIngest(document.pk)
    assert tasks.ingest_document(str(document.pk)) == "nothing to do"


def test_the_upload_queues_the_ingestion_once_its_row_commits(
    org, org_admin, django_capture_on_commit_callbacks
):
    kb = knowledge_base_with(org, org_admin)
    queued: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.ingest_document, "delay", lambda document_id: queued.append(document_id))
        with django_capture_on_commit_callbacks(execute=True):
            uploaded = document_upload(
                knowledge_base=kb, name="policy.md", content=ContentFile(POLICY_EN.encode()), uploaded_by=None
            )

    assert isinstance(uploaded, DocumentQueued) and queued == [str(uploaded.document.pk)]
    assert AuditLog.objects.filter(organization=org, action="document.created").exists()
