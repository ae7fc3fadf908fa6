"""Chunking follows a document's structure (headings as paths, tables whole with their header, pages kept)
and counts Chinese text as the model does, so chunks of either language fit the same budget."""

from __future__ import annotations

import re

import pytest

from agents.engine.tokens import estimate_text_tokens
from agents.knowledge.chunking import chunk_pages

POLICY = """# Purchasing policy

Every purchase follows this policy.

## Payments

Payments up to 50,000 CNY need no approval.

Payments over 50,000 CNY need the finance approver.

## Suppliers

New suppliers are checked by procurement.
"""


def _words(text: str) -> list[str]:
    """The text's words and CJK characters, in order (what no chunking may lose or repeat)."""
    return re.findall(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff|:-]+", text)


def test_each_chunk_carries_the_headings_it_sits_under():
    chunks = chunk_pages([POLICY], max_tokens=400)

    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Purchasing policy",), "Every purchase follows this policy."),
        (
            ("Purchasing policy", "Payments"),
            "Payments up to 50,000 CNY need no approval.\n\nPayments over 50,000 CNY need the finance approver.",
        ),
        (("Purchasing policy", "Suppliers"), "New suppliers are checked by procurement."),
    ]


def test_a_section_that_goes_on_over_a_page_break_keeps_its_path_and_spans_both_pages():
    first = "# Travel\n\n## Hotels\n\nBook the hotel through the travel desk."
    second = "Receipts are kept for ten years.\n\n# Gifts\n\nGifts over 200 CNY are declared."

    chunks = chunk_pages([first, second])

    assert [(c.heading_path, c.page_start, c.page_end) for c in chunks] == [
        (("Travel", "Hotels"), 1, 2),
        (("Gifts",), 2, 2),
    ]
    assert chunks[0].text.endswith("Receipts are kept for ten years.")


def test_a_long_english_text_is_cut_between_sentences_within_the_budget_and_loses_nothing():
    sentences = [f"Rule {n} says that invoice number {n} is paid within {n} days." for n in range(60)]
    text = " ".join(sentences)

    chunks = chunk_pages([text], max_tokens=60)

    assert len(chunks) > 1
    assert all(c.tokens <= 60 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)  # never in the middle of a sentence
    assert _words(" ".join(c.text for c in chunks)) == _words(text)


def test_chinese_text_is_cut_after_its_sentence_marks_and_sized_per_character():
    sentence = "超过五万元的付款需要财务审批人批准。"
    text = sentence * 40  # 720 characters, about 720 tokens

    chunks = chunk_pages([f"# 采购政策\n\n{text}"], max_tokens=100)

    assert all(c.heading_path == ("采购政策",) for c in chunks)
    assert all(c.tokens <= 100 for c in chunks)
    assert all(c.text.endswith("。") for c in chunks)
    # Counted per character, not per four: each chunk holds about 100 characters, not 400.
    assert all(len(c.text) <= 100 for c in chunks) and len(chunks) >= 7
    assert "".join(c.text for c in chunks) == text


def test_a_table_that_fits_is_one_chunk_of_its_own_kind_whole():
    table = "| Amount | Approver |\n|---|---|\n| up to 50,000 | none |\n| over 50,000 | finance |"
    page = f"# Limits\n\nThe limits are:\n\n{table}\n\nAsk finance when unsure."

    [chunk] = chunk_pages([page])

    assert table in chunk.text


def test_a_table_too_big_for_a_chunk_is_cut_between_rows_each_part_under_the_header():
    header = "| Supplier | Country | Limit |\n|---|---|---|"
    rows = [f"| Supplier number {n} | Country {n} | {n * 1000} CNY |" for n in range(80)]
    page = "\n".join([header, *rows])

    chunks = chunk_pages([page], max_tokens=80)

    assert len(chunks) > 2
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert "\n".join(lines[:2]) == header
        assert all(line in rows for line in lines[2:])  # whole rows only
        assert chunk.tokens <= 80
    assert [line for c in chunks for line in c.text.split("\n")[2:]] == rows


def test_a_list_too_big_for_a_chunk_is_cut_between_its_items():
    items = [f"- Item {n}: the supplier delivers within {n} working days of the order." for n in range(40)]

    chunks = chunk_pages(["\n".join(items)], max_tokens=50)

    assert len(chunks) > 1
    assert [line for c in chunks for line in c.text.split("\n\n")] == items


@pytest.mark.parametrize(
    "text",
    ["x" * 5000, "采" * 900, "https://example.com/" + "a/" * 1500],
    ids=["ascii-without-spaces", "chinese-without-marks", "one-long-url"],
)
def test_text_without_any_place_to_cut_is_cut_anyway_within_the_budget_and_loses_nothing(text):
    chunks = chunk_pages([text], max_tokens=64)

    assert all(estimate_text_tokens(c.text) <= 64 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_empty_pages_make_no_chunks_and_a_budget_below_one_is_refused():
    assert chunk_pages(["", "   \n\n"]) == []
    with pytest.raises(ValueError):
        chunk_pages(["text"], max_tokens=0)
