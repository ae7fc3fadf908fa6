"""Client frame decoding: a typed refusal for everything that is not a strict JSON object of bounded size."""

from __future__ import annotations

import pytest

from agents.ws_frames import (
    MAX_FRAME_BYTES,
    FrameDecoded,
    FrameRefused,
    after_seq_parse,
    after_seq_within,
    frame_decode,
)

REFUSED_FRAMES = {
    "binary": None,
    "oversized": '{"type": "message", "content": "' + "x" * MAX_FRAME_BYTES + '"}',
    "not JSON": "{type: message}",
    "NaN": '{"type": "resume", "after_seq": NaN}',
    "Infinity": '{"type": "resume", "after_seq": Infinity}',
    "-Infinity": '{"type": "resume", "after_seq": -Infinity}',
    "a list": '[{"type": "cancel"}]',
    "a string": '"cancel"',
    "deep lists": "[" * 50_000 + "]" * 50_000,
    "deep objects": '{"a":' * 40_000 + "0" + "}" * 40_000,
    "a huge integer": '{"type": "resume", "after_seq": ' + "9" * 5000 + "}",
}


@pytest.mark.parametrize("name", list(REFUSED_FRAMES))
def test_frames_that_are_not_strict_json_objects_are_refused(name):
    outcome = frame_decode(REFUSED_FRAMES[name])
    assert isinstance(outcome, FrameRefused) and outcome.code == "bad_frame" and outcome.message


def test_a_json_object_within_the_limit_is_decoded():
    assert frame_decode('{"type": "resume", "after_seq": 3}') == FrameDecoded(
        {"type": "resume", "after_seq": 3}
    )


@pytest.mark.parametrize("value", [-1, 1.5, "3", True, None, [], {}, float("nan")], ids=repr)
def test_after_seq_must_be_a_non_negative_whole_number(value):
    assert isinstance(after_seq_parse(value), FrameRefused)


def test_after_seq_may_not_pass_the_newest_event():
    assert after_seq_within(7, newest=7) == 7
    assert isinstance(after_seq_within(8, newest=7), FrameRefused)
    assert isinstance(after_seq_within(10**18, newest=0), FrameRefused)
