"""ContextGuard: token estimates, the budget and compaction, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import pytest

from agents.engine.context import (
    BOOKKEEPING_KEY,
    PINNED_KEY,
    SUMMARY_KEY,
    SUMMARY_PREFIX,
    CompactionResult,
    ContextGuard,
    estimate_text_tokens,
    estimate_tokens,
    is_summary_message,
    is_user_turn,
)
from agents.engine.context_summary import render_transcript
from agents.engine.llm import Message, Usage
from agents.engine.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TOKENS_CACHE_KEY,
    estimate_message_tokens,
)
from tests.fakes.openai_server import context_length_error, error, hang, malformed, text

RESERVE = 300
MARGIN = 100

# --- history builders ---------------------------------------------------------------------------


def system(content: str = "You are the agent of Acme's ERP.") -> Message:
    return {"role": "system", "content": content}


def user(content: str, **meta: Any) -> Message:
    return {"role": "user", "content": content, **meta}


def answer(content: str) -> Message:
    return {"role": "assistant", "content": content}


def exchange(*call_ids: str, result_chars: int = 400, name: str = "search", **meta: Any) -> list[Message]:
    """An assistant message calling tools, followed by one tool result per call."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": f'{{"q": "{cid}"}}'}}
        for cid in call_ids
    ]
    results = [
        {"role": "tool", "tool_call_id": cid, "content": f"result {cid} " + "r" * result_chars}
        for cid in call_ids
    ]
    return [{"role": "assistant", "content": "", "tool_calls": calls, **meta}, *results]


def turn(n: int, *, tools: int = 2) -> list[Message]:
    """One user turn: the question, some tool exchanges, the answer."""
    messages = [user(f"question {n}: " + "q" * 400)]
    for t in range(tools):
        messages += exchange(f"call-{n}-{t}")
    messages.append(answer(f"answer {n}"))
    return messages


def history(turns: int, **kwargs: Any) -> list[Message]:
    messages = [system()]
    for n in range(turns):
        messages += turn(n, **kwargs)
    return messages


def guard_for(llm: Any, budget: int, **kwargs: Any) -> ContextGuard:
    """A guard whose budget is exactly ``budget`` tokens."""
    return ContextGuard(
        llm, context_window=budget + RESERVE + MARGIN, summary_reserve=RESERVE, safety_margin=MARGIN, **kwargs
    )


def assert_tool_pairs_intact(messages: list[Message]) -> None:
    """Every tool_calls message is directly followed by all its results; no tool result stands alone."""
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message["role"] != "tool", f"tool message at {i} without its assistant tool_calls"
        i += 1
        if message["role"] == "assistant" and message.get("tool_calls"):
            expected = sorted(call["id"] for call in message["tool_calls"])
            answered = []
            while i < len(messages) and messages[i]["role"] == "tool":
                answered.append(messages[i]["tool_call_id"])
                i += 1
            assert sorted(answered) == expected, f"tool_calls {expected} answered by {answered}"


def questions(messages: list[Message]) -> list[str]:
    return [m["content"].split(":")[0] for m in messages if is_user_turn(m)]


# --- token estimates ----------------------------------------------------------------------------


def test_cjk_text_is_estimated_at_about_one_token_per_character():
    assert estimate_text_tokens("上下文窗口满了怎么办") == 10
    assert estimate_text_tokens("ひらがなとカタカナ") == 9
    assert estimate_text_tokens("한국어") == 3


def test_latin_text_is_estimated_at_about_four_characters_per_token():
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("abcd") == 1
    assert estimate_text_tokens("a" * 400) == 100
    assert estimate_text_tokens("a" * 401) == 101


def test_mixed_text_counts_cjk_and_latin_parts_at_their_own_rates():
    assert estimate_text_tokens("查询 ERP orders") == 2 + 3  # 2 ideographs + 11 ASCII characters
    assert estimate_text_tokens("中" * 100) > estimate_text_tokens("a" * 100) * 3


def test_message_estimate_adds_per_message_overhead_and_counts_tool_calls():
    plain = {"role": "user", "content": "a" * 40}
    assert estimate_message_tokens(plain) == 10 + MESSAGE_OVERHEAD_TOKENS

    call = exchange("c1")[0]
    two_calls = exchange("c1", "c2")[0]
    assert estimate_message_tokens(call) > MESSAGE_OVERHEAD_TOKENS
    assert estimate_message_tokens(two_calls) > estimate_message_tokens(call)
    assert estimate_tokens([plain, call]) == estimate_message_tokens(plain) + estimate_message_tokens(call)


def test_message_estimate_ignores_engine_metadata_keys():
    bare = {"role": "user", "content": "hello there"}
    marked = {"role": "user", "content": "hello there", PINNED_KEY: True, "_note": "x" * 1000}
    assert estimate_message_tokens(marked) == estimate_message_tokens(bare)


def test_message_estimate_is_cached_on_the_message_and_refreshed_when_content_changes():
    message = {"role": "tool", "tool_call_id": "c1", "content": "a" * 400}
    first = estimate_message_tokens(message)
    assert message[TOKENS_CACHE_KEY][0] == first

    message["content"] = "中" * 400
    assert estimate_message_tokens(message) == first - 100 + 400

    message["content"] = [
        {"type": "text", "text": "a" * 40},
        {"type": "image_url", "image_url": {"url": "x"}},
    ]
    assert estimate_message_tokens(message) > 10 + MESSAGE_OVERHEAD_TOKENS


async def test_guard_estimate_follows_appends_replacements_and_edits_of_the_last_message(make_llm):
    guard = ContextGuard(make_llm(), context_window=128000)
    messages = history(2)
    assert guard.estimate(messages) == estimate_tokens(messages)

    messages += exchange("late-1", "late-2")
    assert guard.estimate(messages) == estimate_tokens(messages)

    messages[-1] = {**messages[-1], "content": "replaced " + "z" * 4000}
    assert guard.estimate(messages) == estimate_tokens(messages)

    messages[-1]["content"] += "y" * 400  # extended in place
    assert guard.estimate(messages) == estimate_tokens(messages)

    other = history(1)
    assert guard.estimate(other) == estimate_tokens(other)
    assert guard.estimate(tuple(messages)) == estimate_tokens(messages)


async def test_guard_does_not_revisit_older_messages_when_the_history_only_grew(make_llm):
    guard = ContextGuard(make_llm(), context_window=128000)
    messages = history(4)
    guard.estimate(messages)
    for message in messages[:-1]:
        del message[TOKENS_CACHE_KEY]  # a revisit would put the cache back

    messages += exchange("late-1")
    total = guard.estimate(messages)

    assert all(TOKENS_CACHE_KEY not in message for message in messages[:-3])
    assert total == estimate_tokens(messages)


# --- budget -------------------------------------------------------------------------------------


async def test_budget_is_context_window_minus_summary_reserve_and_safety_margin(make_llm):
    llm = make_llm()
    assert ContextGuard(llm, context_window=128000).budget == 128000 - 4096 - 1024
    guard = ContextGuard(llm, context_window=8192, summary_reserve=1000, safety_margin=192)
    assert guard.budget == 7000


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_window": 4096},  # default reserves leave nothing
        {"context_window": 8000, "summary_reserve": -1},
        {"context_window": 8000, "keep_user_turns": 0},
    ],
)
async def test_guard_settings_that_leave_no_budget_are_rejected(make_llm, kwargs):
    with pytest.raises(ValueError):
        ContextGuard(make_llm(), **kwargs)


async def test_history_within_budget_is_returned_unchanged_without_calling_the_llm(scripted_llm, make_llm):
    messages = history(6)
    guard = guard_for(make_llm(), estimate_tokens(messages))

    result = await guard.check_and_compact(messages)

    assert result == CompactionResult(messages, False, len(messages), len(messages), None)
    assert result.messages is messages
    assert scripted_llm.requests == []


# --- compaction ---------------------------------------------------------------------------------


async def test_history_over_budget_keeps_system_first_then_summary_then_last_three_user_turns(
    scripted_llm, make_llm
):
    messages = history(6)
    scripted_llm.script(text("The user asked six questions about orders; search found results."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.compacted
    assert result.messages[0] is messages[0]
    summary = result.messages[1]
    assert (
        summary["content"]
        == f"{SUMMARY_PREFIX}\nThe user asked six questions about orders; search found results."
    )
    assert result.summary == "The user asked six questions about orders; search found results."
    tail_start = messages.index(next(m for m in messages if m["content"].startswith("question 3:")))
    assert result.messages[2:] == messages[tail_start:]
    assert all(a is b for a, b in zip(result.messages[2:], messages[tail_start:], strict=True))
    assert questions(result.messages) == ["question 3", "question 4", "question 5"]
    assert result.original_messages == len(messages)
    assert result.kept_messages == len(result.messages) - 1
    assert len(scripted_llm.requests) == 1
    assert estimate_tokens(result.messages) <= guard.budget


async def test_compaction_summary_is_marked_for_the_synthesiser_and_ui(scripted_llm, make_llm):
    messages = history(5)
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    summaries = [m for m in result.messages if is_summary_message(m)]
    assert len(summaries) == 1
    assert summaries[0][SUMMARY_KEY] is True
    assert summaries[0]["role"] == "user"
    assert summaries[0]["content"].startswith(SUMMARY_PREFIX)
    assert not is_user_turn(summaries[0])


async def test_pinned_messages_of_the_summarised_part_survive_in_original_order(scripted_llm, make_llm):
    early = user("[USER INTERRUPT] also check invoice 17", **{PINNED_KEY: True})
    later = user("[USER INTERRUPT] and use the EUR ledger", **{PINNED_KEY: True})
    messages = history(1) + [early] + turn(1) + [later] + turn(2) + turn(3) + turn(4) + turn(5)
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.compacted
    assert result.messages[2] is early
    assert result.messages[3] is later
    assert questions(result.messages[4:]) == ["question 3", "question 4", "question 5"]
    assert_tool_pairs_intact(result.messages)


async def test_pinned_tool_exchange_survives_with_all_its_tool_results(scripted_llm, make_llm):
    pinned_exchange = exchange("pinned-a", "pinned-b", **{PINNED_KEY: True})
    messages = history(1) + pinned_exchange + turn(1) + turn(2) + turn(3) + turn(4)
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.compacted
    assert result.messages[2:5] == pinned_exchange
    assert_tool_pairs_intact(result.messages)


async def test_system_messages_of_the_summarised_part_move_to_the_front(scripted_llm, make_llm):
    context_note = system("Session context: the user's organisation is Acme.")
    messages = history(1) + [context_note] + turn(1) + turn(2) + turn(3) + turn(4)
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.messages[:2] == [messages[0], context_note]
    assert is_summary_message(result.messages[2])


def test_bookkeeping_pinned_and_summary_user_messages_are_not_user_turns():
    assert is_user_turn(user("What were sales in May?"))
    assert not is_user_turn(user("Observation: 42 rows", **{BOOKKEEPING_KEY: True}))
    assert not is_user_turn(user("[USER INTERRUPT] stop", **{PINNED_KEY: True}))
    assert not is_user_turn(user(f"{SUMMARY_PREFIX}\n...", **{SUMMARY_KEY: True}))
    assert not is_user_turn(answer("Sales were 42."))


async def test_bookkeeping_messages_inside_the_last_turns_do_not_reduce_the_turns_kept(
    scripted_llm, make_llm
):
    def noisy_turn(n: int) -> list[Message]:
        messages = turn(n)
        messages.insert(-1, user("Reflect: are you still on track?", **{BOOKKEEPING_KEY: True}))
        return messages

    messages = [system()] + [m for n in range(6) for m in noisy_turn(n)]
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert questions(result.messages) == ["question 3", "question 4", "question 5"]


async def test_one_long_tool_run_is_cut_at_a_bookkeeping_message_and_keeps_the_question(
    scripted_llm, make_llm
):
    # One user turn, many tool calls: only the engine's own user messages offer a cut point.
    question = user("Reconcile all May invoices against the ledger.")
    messages = [system(), question]
    for n in range(12):
        messages += exchange(f"call-{n}", result_chars=800)
        if n % 3 == 2:
            messages.append(user("Reflect: are you still on track?", **{BOOKKEEPING_KEY: True}))
    scripted_llm.script(text("Invoices 1-6 reconciled; 3 mismatches found."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.compacted
    assert result.messages[:3] == [messages[0], result.messages[1], question]
    assert is_summary_message(result.messages[1])
    assert result.messages[3][BOOKKEEPING_KEY] is True
    assert result.messages[-1] is messages[-1]
    assert_tool_pairs_intact(result.messages)
    assert estimate_tokens(result.messages) <= guard.budget


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param([system(), user("x" * 20000)], id="one-huge-question"),
        pytest.param([system(), user("Check it."), *exchange("c1", result_chars=20000)], id="no-cut-point"),
        pytest.param([*history(2), user("x" * 8000)], id="last-turn-alone-too-big"),
    ],
)
async def test_nothing_to_summarise_keeps_the_history_without_calling_the_llm(
    scripted_llm, make_llm, messages
):
    guard = guard_for(make_llm(), 1000)
    assert estimate_tokens(messages) > guard.budget

    result = await guard.check_and_compact(messages)

    assert not result.compacted
    assert result.messages is messages
    assert scripted_llm.requests == []


async def test_target_tokens_forces_a_harder_compaction(scripted_llm, make_llm):
    messages = history(6)
    guard = guard_for(make_llm(), estimate_tokens(messages) + 100)
    scripted_llm.script(text("Summary."), text("Summary."))

    untouched = await guard.check_and_compact(messages)
    hard = await guard.check_and_compact(messages, target_tokens=guard.budget // 2)

    assert not untouched.compacted
    assert hard.compacted
    assert estimate_tokens(hard.messages) <= guard.budget // 2
    assert len(questions(hard.messages)) < 3
    assert hard.messages[-1] is messages[-1]
    assert_tool_pairs_intact(hard.messages)


async def test_compacted_history_fits_the_limit_even_when_the_summary_is_too_long(scripted_llm, make_llm):
    messages = history(6)
    scripted_llm.script(text("Very long summary. " * 2000))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert result.compacted
    assert result.summary is not None and result.summary.startswith("Very long summary.")
    assert estimate_message_tokens(result.messages[1]) <= RESERVE
    assert estimate_tokens(result.messages) <= guard.budget


async def test_previous_summary_is_folded_into_the_new_summary(scripted_llm, make_llm):
    old_summary = user(f"{SUMMARY_PREFIX}\nThe user runs the Berlin warehouse.", **{SUMMARY_KEY: True})
    messages = [system(), old_summary] + [m for n in range(5) for m in turn(n)]
    scripted_llm.script(text("New summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    result = await guard.check_and_compact(messages)

    assert [m["content"] for m in result.messages if is_summary_message(m)] == [
        f"{SUMMARY_PREFIX}\nNew summary."
    ]
    transcript = scripted_llm.requests[0]["messages"][1]["content"]
    assert "Earlier summary:\nThe user runs the Berlin warehouse." in transcript


# --- the summarising request --------------------------------------------------------------------


async def test_summary_request_asks_to_preserve_facts_decisions_findings_questions_and_recent_reasoning(
    scripted_llm, make_llm
):
    messages = history(5)
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    await guard.check_and_compact(messages)

    instructions = scripted_llm.requests[0]["messages"][0]["content"]
    assert scripted_llm.requests[0]["messages"][0]["role"] == "system"
    for requirement in (
        "facts",
        "decisions",
        "tool call found",
        "open questions",
        "most recent chain of reasoning",
    ):
        assert requirement in instructions
    assert "language the user writes in" in instructions


async def test_summary_request_carries_only_the_summarised_part_and_no_engine_metadata(
    scripted_llm, make_llm
):
    messages = history(5)
    messages.insert(3, user("[USER INTERRUPT] prefer EUR", **{PINNED_KEY: True}))
    scripted_llm.script(text("Summary."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    await guard.check_and_compact(messages)

    request = scripted_llm.requests[0]
    assert "tools" not in request
    assert all(not key.startswith("_") for message in request["messages"] for key in message)
    transcript = request["messages"][1]["content"]
    assert "question 0" in transcript and "question 1" in transcript
    assert (
        "Assistant called tool search" in transcript and "Tool result (search): result call-0-0" in transcript
    )
    assert "question 2" not in transcript  # kept verbatim, not summarised
    assert "You are the agent of Acme's ERP." not in transcript


def test_oversized_transcript_leaves_out_the_oldest_entries_but_keeps_earlier_summaries():
    messages = [
        user(f"{SUMMARY_PREFIX}\nEarlier: budget approved.", **{SUMMARY_KEY: True}),
        *[user(f"message {n} " + "m" * 400) for n in range(10)],
    ]

    transcript = render_transcript(messages, max_tokens=350)

    assert transcript.startswith("[... 7 earlier entries omitted ...]")
    assert "Earlier: budget approved." in transcript
    assert "message 6 " not in transcript
    assert "message 7 " in transcript and "message 9 " in transcript
    assert estimate_text_tokens(transcript) <= 350


def test_transcript_shortens_a_huge_tool_result_in_the_middle():
    messages = exchange("c1", result_chars=50000)

    transcript = render_transcript(messages, max_tokens=100000)

    assert "characters omitted" in transcript
    assert transcript.endswith("r" * 100)
    assert len(transcript) < 5000


# --- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(error(500), id="server-error"),
        pytest.param(context_length_error(), id="context-length"),
        pytest.param(text(""), id="empty-reply"),
        pytest.param(text("   \n"), id="blank-reply"),
        pytest.param(malformed(b"not json"), id="malformed-body"),
    ],
)
async def test_summariser_failure_keeps_the_original_history(scripted_llm, make_llm, caplog, reply):
    messages = history(6)
    scripted_llm.script(reply)
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)
    snapshot = [dict(m) for m in messages]

    with caplog.at_level(logging.WARNING, logger="agents.engine.context"):
        result = await guard.check_and_compact(messages)

    assert not result.compacted
    assert result.messages is messages
    assert result.summary is None
    assert messages == snapshot
    assert len(scripted_llm.requests) == 1
    assert any("keeping the full history" in record.getMessage() for record in caplog.records)


async def test_cancelling_a_compaction_propagates_instead_of_being_swallowed(scripted_llm, make_llm):
    messages = history(6)
    scripted_llm.script(hang(2.0))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.check_and_compact(messages), timeout=0.2)


async def test_usage_of_the_summarising_call_is_added_to_the_run_usage(scripted_llm, make_llm):
    messages = history(6)
    scripted_llm.script(text("Summary.", usage={"prompt_tokens": 900, "completion_tokens": 40}))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)
    usage = Usage(prompt_tokens=100, completion_tokens=10, total_tokens=110, calls=1)

    await guard.check_and_compact(messages, usage=usage)

    assert usage == Usage(prompt_tokens=1000, completion_tokens=50, total_tokens=1050, calls=2)


async def test_compaction_is_logged_without_conversation_content(scripted_llm, make_llm, caplog):
    messages = history(6)
    messages[1]["content"] = "question 0: secret-merger-plan " + "q" * 400
    scripted_llm.script(text("Summary mentions secret-merger-plan."))
    guard = guard_for(make_llm(), estimate_tokens(messages) - 1)

    with caplog.at_level(logging.DEBUG, logger="agents.engine.context"):
        await guard.check_and_compact(messages)

    assert any("context compacted" in record.getMessage() for record in caplog.records)
    assert not any("secret-merger-plan" in record.getMessage() for record in caplog.records)


# --- property: tool pairs are never split ------------------------------------------------------


def random_history(rng: random.Random) -> list[Message]:
    messages = [system()]
    if rng.random() < 0.3:
        messages.append(system("Session context."))
    if rng.random() < 0.2:
        messages.append(user(f"{SUMMARY_PREFIX}\nolder work", **{SUMMARY_KEY: True}))
    call_number = 0
    for n in range(rng.randint(1, 8)):
        messages.append(user(f"question {n}: " + "q" * rng.randint(10, 600)))
        for _ in range(rng.randint(0, 6)):
            kind = rng.random()
            if kind < 0.55:
                ids = [f"c{call_number + k}" for k in range(rng.randint(1, 3))]
                call_number += len(ids)
                meta = {PINNED_KEY: True} if rng.random() < 0.05 else {}
                messages += exchange(*ids, result_chars=rng.randint(0, 1500), **meta)
            elif kind < 0.7:
                messages.append(user("Observation / reflection", **{BOOKKEEPING_KEY: True}))
            elif kind < 0.8:
                messages.append(user("[USER INTERRUPT] also this", **{PINNED_KEY: True}))
            else:
                messages.append(answer("thinking " + "t" * rng.randint(0, 300)))
        if rng.random() < 0.8:
            messages.append(answer(f"answer {n}"))
    return messages


async def test_tool_calls_and_their_results_are_never_separated_in_random_histories(scripted_llm, make_llm):
    rng = random.Random(20240611)
    llm = make_llm()
    compacted_cases = 0
    for case in range(150):
        messages = random_history(rng)
        total = estimate_tokens(messages)
        budget = max(50, int(total * rng.uniform(0.2, 1.2)))
        target = int(budget * rng.uniform(0.3, 0.9)) if rng.random() < 0.3 else None
        guard = guard_for(llm, budget, keep_user_turns=rng.randint(1, 4))
        scripted_llm.reset()
        scripted_llm.script(text(f"summary of case {case}"))

        result = await guard.check_and_compact(messages, target_tokens=target)

        limit = budget if target is None else target
        assert_tool_pairs_intact(result.messages)
        if not result.compacted:
            assert result.messages is messages
            continue
        compacted_cases += 1
        out = result.messages
        systems = [m for m in out if m["role"] == "system"]
        assert out[: len(systems)] == systems and systems[0] is messages[0]
        assert is_summary_message(out[len(systems)])
        assert sum(map(is_summary_message, out)) == 1
        originals = [m for m in out if not (is_summary_message(m) and m not in messages)]
        positions = [next(i for i, o in enumerate(messages) if o is m) for m in originals]
        non_system = [p for p, m in zip(positions, originals, strict=True) if m["role"] != "system"]
        assert non_system == sorted(non_system), "kept messages changed order"
        assert all(any(m is o for o in out) for m in messages if m.get(PINNED_KEY)), (
            "a pinned message was lost"
        )
        assert out[-1] is messages[-1]
        assert estimate_tokens(out) <= limit
        assert result.kept_messages == len(out) - 1
    assert compacted_cases >= 30  # the generator really exercises compaction
