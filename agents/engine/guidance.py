"""Messages the loop adds to steer the model: cycle warnings, self-reflection, the completion
checklist, and follow-ups taken from the queue."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Sequence

from agents.engine import events, prompts
from agents.engine.context_summary import PINNED_KEY
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.parsing import ToolCall
from agents.engine.run_state import RunState, note


def _args_encoder() -> Callable[[object], str]:
    """The canonical form of a call's arguments in the cycle tracker's keys: byte-identical to
    ``json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)`` (restored runs carry the keys
    in their checkpoints), made by one encoder for every call.

    Where CPython's C encoder is available it is made once, without the circular-reference check (tool
    arguments are parsed JSON, never circular): the same encoder ``json.dumps`` makes per call.
    """
    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    chunks = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        True,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan
    )

    def encode(args: object) -> str:
        return "".join(chunks(args, 0))

    return encode


_canonical_args = _args_encoder()


def after_tool_calls(
    run: RunState, calls: Sequence[ToolCall], *, cycle_threshold: int, reflection_interval: int
) -> None:
    """Count the turn's tool calls; append cycle warnings, then a self-reflection prompt when due.

    A cycle is the same ``(tool_name, canonical arguments)`` seen ``cycle_threshold`` times in the run.
    Reflection comes after every ``reflection_interval`` real tool calls (parse retries, thinking and
    follow-ups do not count). Both are appended after all of the turn's tool results.
    """
    warned: dict[str, int] = {}
    count_call = run.count_call
    for call in calls:
        count = count_call((call.name, _canonical_args(call.args)))
        if cycle_threshold > 0 and count >= cycle_threshold:
            warned[call.name] = count
    for name, count in warned.items():
        run.transcript.append(note(prompts.CYCLE_WARNING.format(tool=name, count=count)))
    before = run.real_calls
    run.real_calls += len(calls)
    if reflection_interval > 0 and before // reflection_interval < run.real_calls // reflection_interval:
        run.transcript.append(note(prompts.SELF_REFLECTION.format(count=run.real_calls)))


async def drain_follow_ups(run: RunState, queue: FollowUpQueue | None) -> bool:
    """Take every queued follow-up into the run as ONE pinned user message (marked ``[USER INTERRUPT]``
    for the model), with one ``inject`` event per follow-up. Returns whether anything was taken."""
    if queue is None:
        return False
    contents = queue.drain()
    if not contents:
        return False
    run.follow_ups_taken += len(contents)
    run.transcript.append({"role": "user", "content": prompts.user_follow_ups(contents), PINNED_KEY: True})
    if run.emit.active:
        for content in contents:
            await run.emit(events.follow_up_taken(content))
    return True


def completion_check_due(run: RunState, *, enabled: bool, min_tools: int) -> bool:
    """Append the one-time completion checklist when the run used enough tools (never with none)."""
    if not enabled or run.checked or run.real_calls < max(1, min_tools):
        return False
    run.checked = True
    run.transcript.append(note(prompts.COMPLETION_CHECKLIST))
    return True
