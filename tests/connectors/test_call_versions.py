"""The configuration version the guard rails read for a call is handed to its tool once, per
organisation, run and tool call."""

from __future__ import annotations

from connectors import call_versions
from connectors.call_versions import call_version_drop, call_version_note, call_version_take


def test_a_noted_version_is_taken_once_by_the_same_organisation_run_and_call():
    call_version_note(1, "run-a", "c1", 42)
    assert call_version_take(2, "run-a", "c1") is None
    assert call_version_take(1, "run-b", "c1") is None
    assert call_version_take(1, "run-a", "c2") is None
    assert call_version_take(1, "run-a", "c1") == 42
    assert call_version_take(1, "run-a", "c1") is None


def test_a_call_without_a_run_or_call_id_is_never_noted():
    call_version_note(1, "", "c1", 42)
    call_version_note(1, "run-a", "", 42)
    assert call_version_take(1, "", "c1") is None and call_version_take(1, "run-a", "") is None


def test_a_dropped_note_is_gone_and_the_oldest_notes_go_beyond_the_bound(monkeypatch):
    call_version_note(1, "run-a", "c1", 42)
    call_version_drop(1, "run-a", "c1")
    assert call_version_take(1, "run-a", "c1") is None

    monkeypatch.setattr(call_versions, "MAX_NOTES", 2)
    for n in range(3):
        call_version_note(1, "run-a", f"k{n}", n)
    assert call_version_take(1, "run-a", "k0") is None
    assert [call_version_take(1, "run-a", f"k{n}") for n in (1, 2)] == [1, 2]
