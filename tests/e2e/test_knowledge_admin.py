"""A knowledge base's admin page in a real browser: several documents chosen at once upload with a
progress bar, each outcome is reported, and the documents' list follows their indexing without a reload
(a worker indexes them meanwhile, here the ingestion run in another process)."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.browser_pages import expect, submit_sign_in
from tests.e2e.conftest import run_checked
from tests.e2e.test_demo_stack import DEMO_PASSWORD, demo_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.e2e

INGEST_QUEUED = (
    "from agents.knowledge.ingestion import document_ingest\n"
    "from agents.knowledge.models import Document\n"
    "for pk in Document.objects.unscoped().filter(status='queued').values_list('pk', flat=True):\n"
    "    document_ingest(pk)\n"
)


def test_several_documents_upload_with_progress_and_the_list_follows_their_indexing(
    demo_server,  # noqa: F811
    browser,
    tmp_path,
):
    files = []
    for name, body in [
        ("travel.md", "# Travel policy\n\nTrain tickets are booked by the office manager."),
        ("差旅.txt", "差旅政策：火车票由行政经理统一预订。"),
    ]:
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        files.append(str(path))
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(20000)
    try:
        page.goto(f"{demo_server.url}/login/")
        submit_sign_in(page, "admin", DEMO_PASSWORD)
        page.goto(f"{demo_server.url}/admin/agents/knowledgebase/")
        page.get_by_role("link", name="purchasing_policy").click()
        page.set_input_files("input[name=upload]", files)
        page.click("input[name=_continue]")

        expect(page.locator(".messagelist")).to_contain_text("“travel.md” is stored and waits to be indexed.")
        expect(page.locator(".messagelist")).to_contain_text("“差旅.txt” is stored and waits to be indexed.")
        documents = page.locator("#documents-group")
        expect(documents.locator("[data-status=queued]")).to_have_count(2)

        run_checked([sys.executable, "manage.py", "shell", "-c", INGEST_QUEUED], demo_server.env, "ingest")

        # no reload: the page's script refreshes the list while a document is being indexed
        expect(documents.locator("[data-status=queued]")).to_have_count(0, timeout=15000)
        expect(documents.locator("[data-status=ready]")).to_have_count(4)
    finally:
        context.close()
    assert demo_server.query("SELECT count(*) FROM agents_document WHERE status = 'ready'") == [(4,)]
