"""Approval cards (card JSON 2.0, FEISHU.md section 3): content, buttons, languages, size limits."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hooks.feishu.cards import (
    MAX_CARD_BYTES,
    approval_decided_card,
    approval_pending_card,
    card_to_content,
    channel_test_card,
    format_arguments,
    format_time,
)
from tests.fakes.feishu_cards import find_button, validate_card, walk_elements

EXPIRES = datetime(2025, 3, 1, 12, 10, tzinfo=UTC)


def pending(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "approval_id": "0b7f6d4e-approval",
        "agent_name": "Finance bot",
        "user_name": "Mia",
        "tool_name": "erp__create_payment",
        "arguments": {"amount": 60000, "currency": "CNY", "payee": "ACME Ltd"},
        "policy_name": "Payments over 50k",
        "expires_at": EXPIRES,
        "language": "en",
    }
    fields.update(overrides)
    return approval_pending_card(**fields)


def texts(card: dict[str, Any]) -> list[str]:
    found = [card["header"]["title"]["content"], card["header"].get("subtitle", {}).get("content", "")]
    for element in walk_elements(card["body"]["elements"]):
        if element["tag"] == "div":
            found.append(element["text"]["content"])
        elif element["tag"] == "markdown":
            found.append(element["content"])
        elif element["tag"] == "button":
            found.append(element["text"]["content"])
    return found


def buttons(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in walk_elements(card["body"]["elements"]) if e["tag"] == "button"]


def arguments_block(card: dict[str, Any]) -> str:
    markdown = next(e["content"] for e in walk_elements(card["body"]["elements"]) if e["tag"] == "markdown")
    match = re.search(r"```json\n(.*)\n```$", markdown, re.S)
    assert match, markdown
    return match.group(1)


# --- the pending card ---------------------------------------------------------------------------


def test_pending_card_is_schema_2_with_update_multi_and_an_orange_header():
    card = pending()
    assert card["schema"] == "2.0"
    assert card["config"] == {"update_multi": True}
    assert card["header"]["template"] == "orange"
    assert card["header"]["title"] == {
        "tag": "plain_text",
        "content": "Approval required: erp__create_payment",
    }
    assert validate_card(card) == []


def test_pending_card_shows_agent_user_tool_policy_expiry_and_arguments():
    shown = "\n".join(texts(pending()))
    for expected in (
        "Agent: Finance bot",
        "Requested by: Mia",
        "Tool: erp__create_payment",
        "Policy: Payments over 50k",
        "Expires: 2025-03-01 12:10 UTC",
        '"amount": 60000',
    ):
        assert expected in shown


def test_pending_card_arguments_are_pretty_json_in_a_code_block():
    arguments = {"amount": 60000, "lines": [{"sku": "A", "qty": 2}], "note": "use `rm` carefully"}
    block = arguments_block(pending(arguments=arguments))
    assert "\n  " in block  # indented
    assert json.loads(block) == arguments  # backticks are JSON escapes, so the block still parses


def test_pending_card_has_approve_and_reject_buttons_with_unique_names_and_opaque_values():
    approve, reject = buttons(pending())
    assert approve["name"] != reject["name"]
    assert approve["behaviors"] == [
        {"type": "callback", "value": {"approval_id": "0b7f6d4e-approval", "decision": "approve"}}
    ]
    assert reject["behaviors"] == [
        {"type": "callback", "value": {"approval_id": "0b7f6d4e-approval", "decision": "reject"}}
    ]
    assert (approve["type"], reject["type"]) == ("primary", "danger")


def test_approving_asks_for_confirmation_and_rejecting_does_not():
    approve, reject = buttons(pending())
    assert approve["confirm"]["title"] == {"tag": "plain_text", "content": "Approve this call?"}
    assert "erp__create_payment" in approve["confirm"]["text"]["content"]
    assert "confirm" not in reject


def test_backticks_in_arguments_cannot_close_the_code_fence():
    card = pending(arguments={"sql": "```\n**fake** [link](https://evil.example)\n```"})
    markdown = next(e["content"] for e in walk_elements(card["body"]["elements"]) if e["tag"] == "markdown")
    assert markdown.count("```") == 2


def test_untrusted_names_are_plain_text_never_markdown():
    card = pending(agent_name="[Click me](https://evil.example)", user_name="**boss**")
    for element in walk_elements(card["body"]["elements"]):
        if element["tag"] == "markdown":
            assert "evil.example" not in element["content"] and "**boss**" not in element["content"]
    assert "Agent: [Click me](https://evil.example)" in texts(card)


def test_huge_arguments_are_cut_and_the_card_stays_under_30_kb():
    arguments = {
        "blob": "x" * 1_000_000,
        "rows": [{"id": i, "text": "é" * 500} for i in range(5000)],
        "nested": {f"k{i}": {"deep": ["v" * 300] * 40} for i in range(200)},
    }
    card = pending(arguments=arguments, language="zh-hans")
    assert len(card_to_content(card).encode()) < MAX_CARD_BYTES
    block = arguments_block(card)
    assert "还有" in block and "个字符" in block and "项" in block
    assert validate_card(card) == []


def test_long_string_value_says_how_much_was_cut():
    block = format_arguments({"note": "a" * 1500})
    assert "a" * 1000 + "… (500 more characters)" in block


def test_long_names_are_clipped():
    card = pending(agent_name="A" * 5000, tool_name="t" * 5000)
    assert len(card["header"]["title"]["content"]) <= 200
    assert len(card_to_content(card).encode()) < MAX_CARD_BYTES


def test_non_json_argument_values_are_shown_as_text():
    block = arguments_block(pending(arguments={"when": datetime(2025, 1, 2, tzinfo=UTC), "ids": (1, 2)}))
    assert json.loads(block) == {"when": "2025-01-02 00:00:00+00:00", "ids": [1, 2]}


# --- languages ----------------------------------------------------------------------------------


def test_pending_card_in_simplified_chinese():
    card = pending(language="zh-hans")
    shown = texts(card)
    assert card["header"]["title"]["content"] == "需要审批：erp__create_payment"
    assert "智能体：Finance bot" in shown and "批准" in shown and "拒绝" in shown


@pytest.mark.parametrize(
    ("language", "approve"), [("zh-CN", "批准"), ("zh", "批准"), ("en-us", "Approve"), ("fr", "Approve")]
)
def test_language_codes_fall_back_to_chinese_or_english(language, approve):
    assert buttons(pending(language=language))[0]["text"]["content"] == approve


def test_caller_translations_override_the_built_in_texts():
    card = pending(texts={"approve": "Genehmigen"})
    assert buttons(card)[0]["text"]["content"] == "Genehmigen"
    assert buttons(card)[1]["text"]["content"] == "Reject"


# --- the decided card ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "template", "title"),
    [
        ("approved", "green", "Approved: erp__create_payment"),
        ("rejected", "red", "Rejected: erp__create_payment"),
        ("expired", "grey", "Expired: erp__create_payment"),
        ("cancelled", "grey", "Cancelled: erp__create_payment"),
    ],
)
def test_decided_card_shows_the_outcome_without_buttons(decision, template, title):
    card = approval_decided_card(
        decision=decision,
        agent_name="Finance bot",
        user_name="Mia",
        tool_name="erp__create_payment",
        language="en",
    )
    assert card["header"]["template"] == template
    assert card["header"]["title"]["content"] == title
    assert card["config"] == {"update_multi": True}
    assert buttons(card) == []
    assert validate_card(card) == []


def test_decided_card_says_who_decided_when_and_why():
    decided_at = datetime(2025, 3, 1, 12, 3, tzinfo=UTC)
    card = approval_decided_card(
        decision="rejected",
        tool_name="erp__create_payment",
        decided_by="April Approver",
        comment="Payee not on the vendor list",
        decided_at=decided_at,
        policy_name="Payments over 50k",
        language="en",
    )
    shown = texts(card)
    assert "Decided by: April Approver" in shown
    assert "Decided at: 2025-03-01 12:03 UTC" in shown
    assert "Comment: Payee not on the vendor list" in shown
    assert "The call was rejected and did not run." in shown


def test_decided_card_accepts_the_pending_cards_fields():
    card = approval_decided_card(
        decision="approved",
        approval_id="x",
        agent_name="Finance bot",
        user_name="Mia",
        tool_name="erp__create_payment",
        arguments={"amount": 1},
        policy_name="p",
        expires_at=EXPIRES,
        decided_by="April",
        decided_at=EXPIRES,
        language="zh-hans",
    )
    assert "审批人：April" in texts(card)
    assert find_button(card, approval_id="x") is None


def test_decided_card_refuses_unknown_decisions():
    with pytest.raises(ValueError):
        approval_decided_card(decision="maybe", language="en")  # type: ignore[arg-type]


def test_test_card_validates_and_names_the_channel():
    card = channel_test_card(channel_name="Finance approvals", language="en")
    assert validate_card(card) == []
    assert any("Finance approvals" in text for text in texts(card))


# --- helpers ------------------------------------------------------------------------------------


def test_card_content_is_a_compact_json_string_and_refuses_cards_over_30_kb():
    card = pending()
    content = card_to_content(card)
    assert isinstance(content, str) and json.loads(content) == card
    big = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "x" * MAX_CARD_BYTES}]}}
    with pytest.raises(ValueError, match="30720"):
        card_to_content(big)


def test_times_show_their_zone_and_naive_times_are_utc():
    assert format_time(datetime(2025, 3, 1, 12, 10)) == "2025-03-01 12:10 UTC"
    beijing = timezone(timedelta(hours=8))
    assert format_time(datetime(2025, 3, 1, 20, 10, tzinfo=beijing)) == "2025-03-01 20:10 UTC+08:00"
