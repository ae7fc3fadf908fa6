"""Keyword search's terms: Chinese is cut into words (and the words inside long ones), other text into
lower-cased words, the same for documents and questions; rankings fuse by reciprocal rank."""

from __future__ import annotations

import pytest

from agents.knowledge.terms import RRF_K, reciprocal_rank_fusion, search_terms


def test_chinese_is_cut_into_words_so_a_question_shares_terms_with_the_passage_that_answers_it():
    passage = search_terms("超过五万元的付款需要财务审批人批准。")
    question = search_terms("五万元以上的付款谁来审批？")

    assert {"付款", "审批", "五万元"} <= set(passage) & set(question)
    assert "五万" in passage and "万元" in passage  # the shorter words inside a long one, for recall
    assert all(term not in passage for term in ("。", "，", " "))


def test_english_terms_are_lower_cased_stems_without_punctuation_and_numbers_keep_their_digit_groups():
    assert search_terms("Payments over 50,000 CNY need the ERP approver.") == [
        "payment",
        "over",
        "50000",
        "cni",
        "need",
        "erp",
        "approv",
    ]


def test_word_forms_meet_at_their_stem_and_function_words_are_left_out():
    asked = search_terms("What does the policy say about checking new suppliers?")
    written = search_terms("A new supplier is checked before its first order.")

    assert set(asked) & set(written) == {"new", "supplier", "check"}
    assert not {"what", "does", "the", "about", "say"} & set(asked)
    assert search_terms("采购政策对新供应商有什么要求？") == search_terms("采购政策对新供应商有什么要求")
    assert "什么" not in search_terms("采购政策对新供应商有什么要求？")


def test_full_width_letters_and_digits_match_their_ascii_forms():
    assert search_terms("ＥＲＰ　２０２６") == search_terms("erp 2026") == ["erp", "2026"]


def test_a_mixed_language_text_keeps_both_languages_terms_in_order():
    assert search_terms("ERP 采购政策 v2") == ["erp", "采购", "政策", "v2"]


def test_an_item_found_by_both_searches_ranks_above_items_found_by_one():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "d"]])

    assert [item for item, _ in fused] == ["c", "a", "b", "d"]  # b and d tie (both second): b was seen first
    assert fused[0][1] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))


def test_fusion_of_nothing_is_nothing_and_ties_keep_the_order_first_seen():
    assert reciprocal_rank_fusion([]) == []
    assert [item for item, _ in reciprocal_rank_fusion([["x"], ["y"]])] == ["x", "y"]
