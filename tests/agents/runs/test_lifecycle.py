"""Every transition of a run's status, tried from every status: the allowed ones change it (with their
events), the forbidden ones change nothing and say so."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import ACTIVE_RUN_STATUSES, Run, RunEvent, RunStatus
from agents.runs import lifecycle
from agents.runs.lifecycle import TRANSITIONS
from agents.services import RunRefused
from tests.agents.factories import ConversationFactory, RunFactory

pytestmark = pytest.mark.django_db

OWNER = "daphne-1#7"
STATUSES = [status.value for status in RunStatus]


def _finish(run: Run) -> bool:
    return lifecycle.run_finish(run_id=run.pk, status=RunStatus.DONE, answer="Done.", lease_owner=OWNER)


def _interrupt(run: Run) -> bool:
    return lifecycle.run_interrupt(run_id=run.pk, now=timezone.now())


def _resume(run: Run) -> bool:
    return lifecycle.run_resume(run_id=run.pk, owner="daphne-2#1")


def _park(run: Run) -> bool:
    return lifecycle.run_park(run_id=run.pk, owner=OWNER, approval_id=uuid.uuid4())


def _resume_parked(run: Run) -> bool:
    return lifecycle.run_resume_parked(run_id=run.pk, owner="worker-1#1")


def _cancel(run: Run) -> bool:
    return lifecycle.run_cancel_parked(run_id=run.pk)


SERVICES: dict[str, Callable[[Run], bool]] = {
    "finish": _finish,
    "interrupt": _interrupt,
    "resume": _resume,
    "park": _park,
    "resume-parked": _resume_parked,
    "cancel": _cancel,
}
# The events each allowed transition adds to the run's stream, in order.
EVENTS = {"interrupt": ["error"], "cancel": ["done"]}


def _run_in(status: str) -> Run:
    """A run in ``status`` held (when running) by ``OWNER``, whose lease lapsed a minute ago."""
    return RunFactory(
        conversation=ConversationFactory(),
        status=status,
        lease_owner=OWNER,
        lease_expires_at=timezone.now() - timedelta(minutes=1),
        checkpoint={"iteration": 2, "usage": {"prompt_tokens": 5}, "elapsed": 1.5},
    )


def test_the_table_names_every_transition_the_docstring_lists():
    assert set(TRANSITIONS) == {*SERVICES, "start"}
    for name in TRANSITIONS:
        assert f"\n{name} " in lifecycle.__doc__
    targets = {status for transition in TRANSITIONS.values() for status in transition.targets}
    assert targets == set(STATUSES)  # every status is reached by some transition


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("name", list(SERVICES))
def test_a_transition_changes_a_run_only_from_the_statuses_its_table_row_allows(name, status):
    run = _run_in(status)
    allowed = status in TRANSITIONS[name].sources

    changed = SERVICES[name](run)

    run.refresh_from_db()
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("event", flat=True))
    assert changed is allowed
    if allowed:
        assert run.status in TRANSITIONS[name].targets
        assert events == EVENTS.get(name, [])
    else:
        assert run.status == status and run.lease_owner == OWNER
        assert events == []


@pytest.mark.parametrize("status", STATUSES)
def test_a_run_starts_only_in_a_conversation_without_an_active_run(status):
    earlier = _run_in(status)
    conversation = earlier.conversation

    if status in ACTIVE_RUN_STATUSES:
        with pytest.raises(RunRefused) as refused:
            lifecycle.run_start(conversation=conversation, user=conversation.user, content="And now?")
        assert refused.value.code == "run_active"
        assert Run.objects.unscoped().filter(conversation=conversation).count() == 1
    else:
        started = lifecycle.run_start(conversation=conversation, user=conversation.user, content="And now?")
        assert started.run.status == RunStatus.RUNNING
        assert started.message.content == "And now?"


def test_a_finish_is_refused_when_another_process_holds_the_run():
    run = _run_in(RunStatus.RUNNING)
    Run.objects.unscoped().filter(pk=run.pk).update(lease_owner="daphne-2#1")

    assert _finish(run) is False
    assert Run.objects.unscoped().get(pk=run.pk).status == RunStatus.RUNNING


def test_a_running_run_whose_lease_is_still_valid_is_not_interrupted():
    run = _run_in(RunStatus.RUNNING)
    Run.objects.unscoped().filter(pk=run.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=30))

    assert _interrupt(run) is False
    assert Run.objects.unscoped().get(pk=run.pk).status == RunStatus.RUNNING


def test_a_cancelled_parked_run_tells_its_chat_with_the_engines_done_payload():
    run = _run_in(RunStatus.PARKED)

    assert _cancel(run) is True

    done = RunEvent.objects.get(run=run, event="done")
    assert done.data == {
        "answer": "",
        "iterations": 2,
        "usage": {"prompt_tokens": 5},
        "elapsed": 1.5,
        "cancelled": True,
        "stop_reason": "cancelled",
    }


def test_a_start_with_an_owner_takes_the_runs_lease_and_reads_the_conversations_last_seq():
    earlier = _run_in(RunStatus.DONE)
    conversation = earlier.conversation
    RunEvent.objects.create(conversation=conversation, run=earlier, seq=41, event="done", data={})

    started = lifecycle.run_start(
        conversation=conversation, user=conversation.user, content="And now?", owner=OWNER
    )

    run = Run.objects.unscoped().get(pk=started.run.pk)
    assert run.lease_owner == OWNER and run.lease_expires_at > timezone.now()
    assert started.last_seq == 41


def test_a_start_without_an_owner_leaves_the_lease_to_the_process_that_runs_it():
    conversation = ConversationFactory()
    started = lifecycle.run_start(conversation=conversation, user=conversation.user, content="Hello")
    run = Run.objects.unscoped().get(pk=started.run.pk)
    assert (run.lease_owner, run.lease_expires_at, started.last_seq) == ("", None, None)


def test_a_refused_start_with_an_owner_leaves_nothing_behind():
    running = _run_in(RunStatus.RUNNING)
    conversation = running.conversation
    with pytest.raises(RunRefused):
        lifecycle.run_start(conversation=conversation, user=conversation.user, content="Again", owner="x#1")
    assert list(Run.objects.unscoped().filter(conversation=conversation).values_list("pk", flat=True)) == [
        running.pk
    ]
    assert not conversation.messages.filter(content="Again").exists()
