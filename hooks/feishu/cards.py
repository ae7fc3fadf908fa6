"""Feishu card JSON 2.0 builders for approval requests (FEISHU.md section 3).

Django-free. Texts come from a small built-in table in Simplified Chinese (``"zh-hans"``) and
English (``"en"``, also the fallback for any other language); a caller that has its own
translations passes ``texts={key: translated}`` to override any entry of :data:`TEXTS`.

Untrusted values (names, tool names, comments) are shown as ``plain_text`` so they cannot inject
markdown links; arguments go in a fenced code block whose backticks are JSON-escaped, and long
values are cut so that every card stays well under Feishu's 30 KB limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeGuard, get_args

MAX_CARD_BYTES = 30 * 1024
ARGUMENTS_BUDGET = 12 * 1024  # bytes of pretty JSON; the rest of the card stays far below the limit
MAX_FIELD_CHARS = 200
MAX_COMMENT_CHARS = 1000
# (longest string, most items per list/dict), tried in order until the arguments fit the budget.
_SHORTEN_STEPS = ((1000, 50), (300, 20), (100, 10), (40, 5))
_MAX_DEPTH = 8

Decision = Literal["approved", "rejected", "expired", "cancelled"]
_DECISIONS: frozenset[str] = frozenset(get_args(Decision))

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "pending_title": "Approval required: {tool}",
        "agent": "Agent",
        "user": "Requested by",
        "tool": "Tool",
        "policy": "Policy",
        "expires": "Expires",
        "why": "Why it was held",
        "approvers": "Approvers",
        "decide_in_web": "Nobody can decide on this card: decide in the platform's approvals inbox.",
        "arguments": "Arguments",
        "approve": "Approve",
        "reject": "Reject",
        "confirm_title": "Approve this call?",
        "confirm_text": "The agent will call {tool} with the arguments shown.",
        "approved_title": "Approved: {tool}",
        "rejected_title": "Rejected: {tool}",
        "expired_title": "Expired: {tool}",
        "cancelled_title": "Cancelled: {tool}",
        "approved_text": "The call was approved.",
        "rejected_text": "The call was rejected and did not run.",
        "expired_text": "Nobody decided in time; the call did not run.",
        "cancelled_text": "The run was cancelled; the call did not run.",
        "decided_by": "Decided by",
        "decided_at": "Decided at",
        "comment": "Comment",
        "cut_chars": "… ({count} more characters)",
        "cut_items": "… ({count} more items)",
        "test_title": "Test card",
        "test_text": "Feishu channel {channel} is connected: approval cards will arrive here.",
    },
    "zh-hans": {
        "pending_title": "需要审批：{tool}",
        "agent": "智能体",
        "user": "发起人",
        "tool": "工具",
        "policy": "审批策略",
        "expires": "截止时间",
        "why": "审批原因",
        "approvers": "审批人",
        "decide_in_web": "无法在此卡片上审批：请在平台的审批收件箱中处理。",
        "arguments": "参数",
        "approve": "批准",
        "reject": "拒绝",
        "confirm_title": "确认批准这次调用？",
        "confirm_text": "智能体将使用上面显示的参数调用 {tool}。",
        "approved_title": "已批准：{tool}",
        "rejected_title": "已拒绝：{tool}",
        "expired_title": "已过期：{tool}",
        "cancelled_title": "已取消：{tool}",
        "approved_text": "调用已获批准。",
        "rejected_text": "调用已被拒绝，未执行。",
        "expired_text": "截止前无人审批，调用未执行。",
        "cancelled_text": "运行已取消，调用未执行。",
        "decided_by": "审批人",
        "decided_at": "审批时间",
        "comment": "备注",
        "cut_chars": "…（还有 {count} 个字符）",
        "cut_items": "…（还有 {count} 项）",
        "test_title": "测试卡片",
        "test_text": "飞书渠道 {channel} 已连接：审批卡片将发送到这里。",
    },
}

_TEMPLATES: dict[str, str] = {
    "pending": "orange",
    "approved": "green",
    "rejected": "red",
    "expired": "grey",
    "cancelled": "grey",
}


def card_to_content(card: Mapping[str, Any]) -> str:
    """Serialise ``card`` to the JSON string Feishu expects; ``ValueError`` when over 30 KB."""
    content = json.dumps(card, ensure_ascii=False, separators=(",", ":"))
    size = len(content.encode("utf-8"))
    if size > MAX_CARD_BYTES:
        raise ValueError(f"the card is {size} bytes; Feishu accepts at most {MAX_CARD_BYTES} bytes")
    return content


def texts_for(language: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The text table for ``language`` ("zh-hans", "zh-cn", "zh" → Chinese; anything else English)."""
    key = "zh-hans" if language.lower().startswith("zh") else "en"
    texts = dict(TEXTS[key])
    if overrides:
        texts.update(overrides)
    return texts


def approval_pending_card(
    *,
    approval_id: str,
    agent_name: str,
    user_name: str,
    tool_name: str,
    arguments: Mapping[str, Any],
    policy_name: str,
    expires_at: datetime,
    approvers: Sequence[str] = (),
    clickable: bool = True,
    reason: str = "",
    language: str = "en",
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The card asking approvers to approve or reject one tool call (``arguments`` already redacted).

    The buttons carry only ``{"approval_id", "decision": "approve"|"reject"}``; approving asks for
    confirmation. With ``clickable`` False (no Feishu approvers) the card has no buttons and says to
    decide in the approvals inbox.
    """
    t = texts_for(language, texts)
    tool = _clip(tool_name)
    value = {"approval_id": str(approval_id)}
    elements: list[dict[str, Any]] = [
        _row(t["agent"], agent_name),
        _row(t["user"], user_name),
        _row(t["tool"], tool_name),
        _row(t["policy"], policy_name),
        _row(t["expires"], format_time(expires_at)),
        *([_row(t["why"], reason, limit=MAX_COMMENT_CHARS)] if reason else []),
    ]
    if approvers:
        elements.append(_row(t["approvers"], ", ".join(approvers), limit=MAX_COMMENT_CHARS))
    elements.append(_arguments_block(t, arguments))
    if not clickable:
        elements.append(_plain(t["decide_in_web"]))
    else:
        elements += _decision_buttons(t, value, tool)
    return _card(
        title=t["pending_title"].format(tool=tool), subtitle=agent_name, template="pending", elements=elements
    )


def _decision_buttons(t: Mapping[str, str], value: dict[str, str], tool: str) -> list[dict[str, Any]]:
    return [
        {"tag": "hr"},
        {
            "tag": "column_set",
            "flex_mode": "none",
            "horizontal_spacing": "default",
            "columns": [
                _column(
                    _button(
                        name="approve",
                        label=t["approve"],
                        kind="primary",
                        value={**value, "decision": "approve"},
                        confirm=(t["confirm_title"], t["confirm_text"].format(tool=tool)),
                    )
                ),
                _column(
                    _button(
                        name="reject", label=t["reject"], kind="danger", value={**value, "decision": "reject"}
                    )
                ),
            ],
        },
    ]


def approval_decided_card(
    *,
    decision: Decision,
    agent_name: str = "",
    user_name: str = "",
    tool_name: str = "",
    policy_name: str = "",
    arguments: Mapping[str, Any] | None = None,
    decided_by: str | None = None,
    comment: str | None = None,
    decided_at: datetime | None = None,
    approval_id: str | None = None,
    expires_at: datetime | None = None,
    language: str = "en",
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The final card (no buttons): the outcome, who decided, when, and the comment.

    Accepts the pending card's arguments so callers can pass the same set; ``approval_id`` and
    ``expires_at`` are not shown.
    """
    decision = decision_of(decision)  # callers without types may pass any status
    t = texts_for(language, texts)
    tool = _clip(tool_name)
    elements: list[dict[str, Any]] = [_plain(t[f"{decision}_text"])]
    for label, value in ((t["agent"], agent_name), (t["user"], user_name), (t["tool"], tool_name)):
        if value:
            elements.append(_row(label, value))
    if policy_name:
        elements.append(_row(t["policy"], policy_name))
    if decided_by:
        elements.append(_row(t["decided_by"], decided_by))
    if decided_at is not None:
        elements.append(_row(t["decided_at"], format_time(decided_at)))
    if comment:
        elements.append(_row(t["comment"], comment, limit=MAX_COMMENT_CHARS))
    if arguments is not None:
        elements.append(_arguments_block(t, arguments))
    title = t[f"{decision}_title"].format(tool=tool)
    return _card(title=title, subtitle=agent_name, template=decision, elements=elements)


def decision_of(status: str) -> Decision:
    """``status`` as the outcome a decided card shows: a request's status once it is no longer pending
    (``ValueError`` for any other, ``pending`` included)."""
    if not _is_decision(status):
        raise ValueError(f"unknown decision {status!r}")
    return status


def _is_decision(status: str) -> TypeGuard[Decision]:
    return status in _DECISIONS


def channel_test_card(
    *, channel_name: str, language: str = "en", texts: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A small card the admin's "send a test card" action posts to check a channel's setup."""
    t = texts_for(language, texts)
    return _card(
        title=t["test_title"],
        subtitle="",
        template="pending",
        elements=[_plain(t["test_text"].format(channel=_clip(channel_name)))],
    )


def format_arguments(
    arguments: Any,
    *,
    budget: int = ARGUMENTS_BUDGET,
    language: str = "en",
    texts: Mapping[str, str] | None = None,
) -> str:
    """Pretty JSON of ``arguments``, long strings and collections cut until it fits ``budget`` bytes.

    Backticks are written as the JSON escape ``\\u0060`` so the text cannot close a markdown fence.
    """
    return _format_arguments(texts_for(language, texts), arguments, budget)


def format_time(moment: datetime) -> str:
    """``2025-03-01 14:05 UTC``; a naive datetime is taken as UTC, an aware one keeps its zone."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    zone = moment.tzname() or moment.strftime("UTC%z")
    return f"{moment:%Y-%m-%d %H:%M} {zone}"


# --- building blocks -------------------------------------------------------------------------


def _card(*, title: str, subtitle: str, template: str, elements: list[dict[str, Any]]) -> dict[str, Any]:
    header: dict[str, Any] = {
        "title": {"tag": "plain_text", "content": _clip(title)},
        "template": _TEMPLATES[template],
    }
    if subtitle:
        header["subtitle"] = {"tag": "plain_text", "content": _clip(subtitle)}
    return {
        "schema": "2.0",
        "config": {"update_multi": True},
        "header": header,
        "body": {"elements": elements},
    }


def _plain(text: str) -> dict[str, Any]:
    return {"tag": "div", "text": {"tag": "plain_text", "content": text}}


def _row(label: str, value: str, *, limit: int = MAX_FIELD_CHARS) -> dict[str, Any]:
    return _plain(f"{label}{_sep(label)}{_clip(str(value), limit)}")


def _sep(label: str) -> str:
    # A full-width colon after a Chinese label, ": " after anything else.
    return "：" if label and "\u4e00" <= label[-1] <= "\u9fff" else ": "


def _column(element: dict[str, Any]) -> dict[str, Any]:
    return {"tag": "column", "width": "auto", "elements": [element]}


def _button(
    *, name: str, label: str, kind: str, value: dict[str, str], confirm: tuple[str, str] | None = None
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "tag": "button",
        "name": name,
        "text": {"tag": "plain_text", "content": label},
        "type": kind,
        "behaviors": [{"type": "callback", "value": value}],
    }
    if confirm is not None:
        button["confirm"] = {
            "title": {"tag": "plain_text", "content": confirm[0]},
            "text": {"tag": "plain_text", "content": confirm[1]},
        }
    return button


def _arguments_block(t: Mapping[str, str], arguments: Any) -> dict[str, Any]:
    pretty = _format_arguments(t, arguments, ARGUMENTS_BUDGET)
    return {"tag": "markdown", "content": f"**{t['arguments']}**\n```json\n{pretty}\n```"}


def _clip(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_arguments(t: Mapping[str, str], arguments: Any, budget: int) -> str:
    text = ""
    for max_chars, max_items in _SHORTEN_STEPS:
        shortened = _shorten(arguments, t, max_chars, max_items, 0)
        text = json.dumps(shortened, ensure_ascii=False, indent=2, default=str).replace("`", "\\u0060")
        if len(text.encode("utf-8")) <= budget:
            return text
    return text.encode("utf-8")[: budget - 4].decode("utf-8", "ignore") + "\n…"


def _shorten(value: Any, t: Mapping[str, str], max_chars: int, max_items: int, depth: int) -> Any:
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return value[:max_chars] + t["cut_chars"].format(count=len(value) - max_chars)
    if depth >= _MAX_DEPTH and isinstance(value, Mapping | list | tuple):
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {str(k): _shorten(v, t, max_chars, max_items, depth + 1) for k, v in items[:max_items]}
        if len(items) > max_items:
            out["…"] = t["cut_items"].format(count=len(items) - max_items)
        return out
    if isinstance(value, list | tuple):
        out_list = [_shorten(v, t, max_chars, max_items, depth + 1) for v in value[:max_items]]
        if len(value) > max_items:
            out_list.append(t["cut_items"].format(count=len(value) - max_items))
        return out_list
    if isinstance(value, int | float | bool) or value is None:
        return value
    return _shorten(str(value), t, max_chars, max_items, depth)
