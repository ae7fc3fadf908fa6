"""A run's end: its figures on the run, its answer (and compaction summary) in the history, its lease and
checkpoints released, and nothing at all when another process holds the run now."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Message, Run, RunCheckpoint, RunStatus
from agents.runs.lifecycle import run_finish
from agents.selectors import engine_history
from tests.agents.factories import ConversationFactory, MessageFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def running_run():
    conversation = ConversationFactory()
    long_ago = timezone.now() - timedelta(days=1)
    type(conversation).objects.unscoped().filter(pk=conversation.pk).update(updated_at=long_ago)
    run = RunFactory(
        conversation=conversation,
        status=RunStatus.RUNNING,
        lease_owner="daphne-1#7",
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )
    MessageFactory(conversation=conversation, run=run, content="What is due?")
    RunCheckpoint.objects.create(run=run, seq=1, data={"messages": []})
    return run


def test_a_finished_run_keeps_its_figures_and_its_answer_joins_the_history(running_run):
    closed = run_finish(
        run_id=running_run.pk,
        status=RunStatus.DONE,
        answer="Two invoices are due.",
        usage={"prompt_tokens": 120, "completion_tokens": 9},
        iterations=2,
        elapsed=1.25,
        stop_reason="final_answer",
        summary="The user asked about invoices.",
        lease_owner="daphne-1#7",
    )

    assert closed is True
    run = Run.objects.unscoped().get(pk=running_run.pk)
    assert (run.status, run.answer, run.iterations, run.elapsed, run.stop_reason) == (
        "done",
        "Two invoices are due.",
        2,
        1.25,
        "final_answer",
    )
    assert run.usage == {"prompt_tokens": 120, "completion_tokens": 9}
    assert run.lease_owner == "" and run.lease_expires_at is None and run.finished_at is not None
    rows = list(Message.objects.filter(run=run).order_by("created_at", "id").values_list("role", "pinned"))
    assert rows == [("user", False), ("summary", True), ("assistant", False)]
    later = MessageFactory(conversation=run.conversation, content="And next week?")
    history = engine_history(conversation_id=run.conversation_id, before_message_id=later.pk)
    assert history[-1] == {"role": "assistant", "content": "Two invoices are due."}
    assert not RunCheckpoint.objects.filter(run=run).exists()
    assert run.conversation.updated_at > timezone.now() - timedelta(minutes=1)


def test_a_run_ended_without_an_answer_adds_no_message(running_run):
    assert run_finish(run_id=running_run.pk, status=RunStatus.CANCELLED, stop_reason="cancelled")
    assert list(Message.objects.filter(run=running_run).values_list("role", flat=True)) == ["user"]
    assert Run.objects.unscoped().get(pk=running_run.pk).status == "cancelled"


def test_a_run_another_process_holds_now_is_left_untouched(running_run):
    Run.objects.unscoped().filter(pk=running_run.pk).update(lease_owner="daphne-2#1")

    closed = run_finish(run_id=running_run.pk, status=RunStatus.DONE, answer="late", lease_owner="daphne-1#7")

    assert closed is False
    run = Run.objects.unscoped().get(pk=running_run.pk)
    assert run.status == "running" and run.lease_owner == "daphne-2#1" and run.answer == ""
    assert not Message.objects.filter(run=run, role="assistant").exists()
    assert RunCheckpoint.objects.filter(run=run).exists()


def test_a_run_the_sweeper_interrupted_is_not_closed_by_its_old_process(running_run):
    Run.objects.unscoped().filter(pk=running_run.pk).update(status=RunStatus.INTERRUPTED)
    assert run_finish(run_id=running_run.pk, status=RunStatus.DONE, lease_owner="daphne-1#7") is False
    assert Run.objects.unscoped().get(pk=running_run.pk).status == "interrupted"
