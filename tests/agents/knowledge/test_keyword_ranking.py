"""Keyword ranking in large knowledge bases: the document frequencies kept at indexing, and the passages
looked at picked by the question's rarest terms."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from agents.knowledge import keyword_index
from agents.knowledge.keyword_index import TermStatistics, keyword_search, rarest_terms, term_statistics
from agents.knowledge.models import Chunk, DocumentTerm
from agents.knowledge.services import document_delete
from agents.knowledge.terms import search_terms
from tests.agents.knowledge.world import indexed, knowledge_base_with


def _passages(*texts: str) -> str:
    return "\n\n".join(f"## Part {n}\n\n{text}" for n, text in enumerate(texts))


def _found_texts(org, kb, question: str) -> list[str]:
    hits = keyword_search(
        organization_id=org.id, knowledge_base_ids=[kb.pk], terms=search_terms(question), limit=5
    )
    by_id = {
        chunk.id: chunk.text
        for chunk in Chunk.objects.for_org(org).filter(pk__in=[hit.chunk_id for hit in hits])
    }
    return [by_id[hit.chunk_id] for hit in hits]


@pytest.mark.django_db
def test_indexing_counts_the_passages_that_hold_each_term_and_reindexing_replaces_the_counts(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "fleet.md", _passages("Trucks need a licence.", "Trucks and vans need insurance."))
    counts = dict(DocumentTerm.objects.for_org(org).filter(document=document).values_list("term", "passages"))
    assert counts["truck"] == 2 and counts["licenc"] == 1 and counts["insur"] == 1
    assert counts["part"] == 2  # the heading is searched with its passage

    replaced = indexed(kb, "fleet.md", "## Vans\n\nVans only.")

    assert replaced.pk == document.pk and replaced.version == 2
    counts = dict(DocumentTerm.objects.for_org(org).filter(document=document).values_list("term", "passages"))
    assert counts == {"van": 1, "onli": 1}  # one passage, "Vans" twice in it
    assert "truck" not in counts


@pytest.mark.django_db
def test_deleting_a_document_takes_its_counts_out_of_the_frequencies(org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    kept = indexed(kb, "a.md", _passages("Forklift training is yearly."))
    gone = indexed(
        kb, "b.md", _passages("Forklift keys stay at the desk.", "Forklift batteries charge at night.")
    )
    before = term_statistics(organization_id=org.id, knowledge_base_ids=[kb.pk], terms=["forklift"])
    assert before.frequencies == {"forklift": 3} and before.passages == 3

    document_delete(document=gone, actor=org_admin)

    after = term_statistics(organization_id=org.id, knowledge_base_ids=[kb.pk], terms=["forklift"])
    assert after.frequencies == {"forklift": 1} and after.passages == kept.chunk_count == 1


@pytest.mark.django_db
def test_frequencies_are_counted_only_among_the_organisations_own_knowledge_bases(org, org_admin, other_org):
    ours = knowledge_base_with(org, org_admin)
    indexed(ours, "a.md", _passages("Pallets are stacked two high."))
    theirs = knowledge_base_with(other_org, None)
    indexed(theirs, "b.md", _passages("Pallets here.", "Pallets there.", "Pallets everywhere."))

    seen = term_statistics(organization_id=org.id, knowledge_base_ids=[ours.pk, theirs.pk], terms=["pallet"])

    assert seen.frequencies == {"pallet": 1} and seen.passages == 1


def test_a_question_whose_terms_are_few_enough_is_looked_up_by_all_of_them():
    statistics = TermStatistics(passages=10_000, frequencies={"invoic": 40, "approv": 900, "payment": 1000})
    assert rarest_terms(["payment", "invoic", "approv"], statistics) == ["payment", "invoic", "approv"]


def test_a_question_with_common_terms_is_looked_up_by_its_rarest_ones_within_the_bound():
    statistics = TermStatistics(
        passages=100_000, frequencies={"invoic": 40, "approv": 1500, "payment": 30_000, "polici": 60_000}
    )
    assert rarest_terms(["polici", "payment", "invoic", "approv"], statistics) == ["invoic", "approv"]
    only_common = TermStatistics(passages=100_000, frequencies={"payment": 30_000, "polici": 60_000})
    assert rarest_terms(["polici", "payment"], only_common) == ["payment"]


def test_a_term_no_passage_holds_is_not_taken_for_the_rarest():
    statistics = TermStatistics(passages=100_000, frequencies={"oper": 2_400, "integ": 900})
    assert rarest_terms(["slash", "oper", "integ"], statistics) == ["integ"]
    assert rarest_terms(["slash", "oper"], statistics) == ["oper"]


def test_a_rare_term_weighs_more_than_a_common_one():
    statistics = TermStatistics(passages=1000, frequencies={"rare": 2, "common": 900})
    assert statistics.weight("rare") > statistics.weight("common") > 0
    assert statistics.weight("never-counted") > statistics.weight("rare")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("common", "rare", "question", "answer"),
    [
        (
            "The warehouse procedure number {n} covers shelving.",
            "The warehouse procedure for hazardous chemicals is strict.",
            "warehouse procedure hazardous",
            "hazardous chemicals",
        ),
        (
            "仓库管理规定第{n}条：货架。",
            "仓库管理规定：危险化学品单独存放。",
            "仓库管理规定 危险化学品",
            "危险化学品",
        ),
    ],
    ids=["en", "zh"],
)
def test_in_a_large_base_the_passage_with_the_rare_term_is_found_past_the_common_ones(
    org, org_admin, monkeypatch, common, rare, question, answer
):
    monkeypatch.setattr(keyword_index, "CANDIDATE_PASSAGES", 3)
    kb = knowledge_base_with(org, org_admin)
    indexed(kb, "manual.md", _passages(*(common.format(n=n) for n in range(8)), rare))

    found = _found_texts(org, kb, question)

    assert found and answer in found[0]
    assert all(answer in text for text in found)  # only the passages holding the rarest term were weighed


@pytest.mark.django_db
def test_on_postgresql_the_common_terms_still_order_the_passages_found_by_the_rare_one(
    org, org_admin, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's FTS5 weighs the rare terms only in a large base")
    monkeypatch.setattr(keyword_index, "CANDIDATE_PASSAGES", 3)
    kb = knowledge_base_with(org, org_admin)
    filler = [f"Shelving rule {n} for the warehouse." for n in range(8)]
    indexed(
        kb,
        "manual.md",
        _passages(
            *filler, "Chemicals are labelled.", "Warehouse chemicals are locked in the warehouse cage."
        ),
    )

    found = _found_texts(org, kb, "warehouse chemicals")

    assert [text.split()[0] for text in found] == ["Warehouse", "Chemicals"]


@pytest.mark.django_db
def test_the_upgrade_counts_the_terms_of_passages_indexed_before_it(org, org_admin):
    from django.apps import apps

    counting = importlib.import_module("agents.migrations.0017_knowledge_document_terms")
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "fleet.md", _passages("Trucks need a licence.", "Trucks and vans need insurance."))
    counted_at_indexing = set(DocumentTerm.objects.for_org(org).values_list("document", "term", "passages"))
    DocumentTerm.objects.for_org(org).delete()  # as before the upgrade

    counting.count_terms(apps, None)

    assert set(DocumentTerm.objects.for_org(org).values_list("document", "term", "passages")) == (
        counted_at_indexing
    )
    assert (document.pk, "truck", 2) in counted_at_indexing
