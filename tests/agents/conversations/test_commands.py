"""The conversation command layer itself: posting a message, cancelling and resuming, each a typed command
with a typed result, whichever entry point sends it."""

from __future__ import annotations

import logging
import uuid

import pytest
from channels.db import database_sync_to_async

from agents.conversations.commands import (
    Cancel,
    Cancelled,
    CancelRequested,
    FollowUpQueued,
    NothingToCancel,
    PostMessage,
    Refused,
    Resume,
    RunResumed,
    RunStarted,
    Sender,
)
from agents.conversations.handling import (
    Launch,
    SendControl,
    command_deliver,
    command_handle,
    command_record,
)
from agents.models import Message, MessageRole, Run, RunEvent, RunStatus
from agents.runs.control import CANCEL, FollowUp
from agents.runs.manager import run_manager
from platform_core.models import Role
from tests.agents.factories import ConversationFactory, MessageFactory, RunFactory
from tests.factories import member_of
from tests.fakes.openai_server import hang, text


def _sender(conversation, via="websocket") -> Sender:
    return Sender(organization_id=conversation.organization_id, user=conversation.user, via=via)


async def _finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


# -- post a message ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_message_to_an_idle_conversation_starts_a_run_held_by_this_process(chat):
    user, conversation = chat()

    recorded = command_record(PostMessage(_sender(conversation), conversation, "Where is order 7?"))

    run = Run.objects.unscoped().get(conversation=conversation)
    question = Message.objects.get(run=run)
    assert recorded.result == RunStarted(run.pk, conversation.pk, question.pk)
    assert run.status == RunStatus.RUNNING and run.lease_owner != "" and run.lease_expires_at is not None
    assert (question.role, question.content, question.injected) == (
        MessageRole.USER,
        "Where is order 7?",
        False,
    )
    assert isinstance(recorded.delivery, Launch) and recorded.delivery.owner == run.lease_owner


@pytest.mark.django_db
def test_a_message_to_a_busy_conversation_is_stored_as_its_runs_follow_up(chat):
    user, conversation = chat()
    active = RunFactory(conversation=conversation, status=RunStatus.RUNNING)

    recorded = command_record(PostMessage(_sender(conversation), conversation, "Also order 8"))

    follow_up = Message.objects.get(run=active)
    assert recorded.result == FollowUpQueued(active.pk, conversation.pk, follow_up.pk)
    assert recorded.delivery == SendControl(active.pk, FollowUp("Also order 8", follow_up.pk))
    assert follow_up.injected and follow_up.pinned and follow_up.content == "Also order 8"
    assert Run.objects.unscoped().filter(conversation=conversation).count() == 1


@pytest.mark.django_db
def test_at_the_users_run_limit_a_new_run_is_refused_but_a_follow_up_still_joins(chat, settings):
    settings.AGENT_MAX_CONCURRENT_RUNS_PER_USER = 1
    user, conversation = chat()
    active = RunFactory(conversation=conversation, status=RunStatus.RUNNING)
    elsewhere = ConversationFactory(
        organization=conversation.organization, user=user, agent=conversation.agent
    )

    joined = command_record(PostMessage(_sender(conversation), conversation, "Also order 8")).result
    refused = command_record(PostMessage(_sender(elsewhere), elsewhere, "And order 9?")).result

    assert isinstance(joined, FollowUpQueued) and joined.run_id == active.pk
    assert isinstance(refused, Refused) and refused.code == "too_many_runs"
    assert not Run.objects.unscoped().filter(conversation=elsewhere).exists()


@pytest.mark.django_db
def test_a_message_that_may_not_join_a_busy_conversation_is_refused(chat):
    user, conversation = chat()
    RunFactory(conversation=conversation, status=RunStatus.RUNNING)

    result = command_record(
        PostMessage(_sender(conversation, "mcp"), conversation, "Another question", follow_up=False)
    ).result

    assert isinstance(result, Refused) and result.code == "run_active"
    assert not Message.objects.filter(conversation=conversation).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("content", ["", "   ", None, 7, "x" * 20001])
def test_an_empty_or_oversized_message_is_refused_and_nothing_is_stored(chat, content):
    user, conversation = chat()

    recorded = command_record(PostMessage(_sender(conversation), conversation, content))

    assert isinstance(recorded.result, Refused)
    assert recorded.result.code in ("empty_message", "message_too_large") and recorded.delivery is None
    assert not Run.objects.unscoped().exists() and not Message.objects.exists()


@pytest.mark.django_db
def test_every_command_about_a_conversation_that_is_not_the_senders_is_refused_and_changes_nothing(chat):
    user, conversation = chat()
    colleague = member_of(conversation.organization, Role.MEMBER, username="colin")
    RunFactory(conversation=conversation, status=RunStatus.PARKED)
    as_colleague = Sender(organization_id=conversation.organization_id, user=colleague, via="http")
    other_org = Sender(organization_id=conversation.organization_id + 1000, user=user, via="http")

    for sender in (as_colleague, other_org):
        for command in (
            PostMessage(sender, conversation, "Hello"),
            Cancel(sender, conversation),
            Resume(sender, conversation),
        ):
            result = command_record(command).result
            assert isinstance(result, Refused) and result.code == "conversation_not_found", command

    assert list(Run.objects.unscoped().values_list("status", flat=True)) == [RunStatus.PARKED]
    assert not Message.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_a_started_run_is_launched_and_a_follow_up_reaches_it_and_a_cancel_stops_it(chat, scripted_llm):
    # Given a run started by a message (its model hangs)
    scripted_llm.script(hang(20))
    user, conversation = await database_sync_to_async(chat)()
    started = await command_handle(PostMessage(_sender(conversation), conversation, "Summarise the orders"))
    assert isinstance(started, RunStarted) and started.run_id in run_manager.runs

    # When a follow-up and then a cancel are sent to it
    queued = await command_handle(PostMessage(_sender(conversation), conversation, "Only 2024"))
    cancel = await command_handle(Cancel(_sender(conversation), conversation))
    await _finish_runs()

    # Then the run took the follow-up and ended cancelled
    assert queued == FollowUpQueued(started.run_id, conversation.pk, queued.message_id)
    assert cancel == CancelRequested(started.run_id)
    run = await Run.objects.unscoped().aget(pk=started.run_id)
    assert run.status == RunStatus.CANCELLED
    done = await RunEvent.objects.filter(run=run, event="done").aget()
    assert done.data["cancelled"] is True


@pytest.mark.django_db(transaction=True)
async def test_a_cancel_recorded_apart_from_its_delivery_reaches_the_working_run(chat, scripted_llm):
    # Given a working run (as an HTTP view records a cancel in its request's thread)
    scripted_llm.script(hang(20))
    user, conversation = await database_sync_to_async(chat)()
    started = await command_handle(PostMessage(_sender(conversation, "http"), conversation, "Slow question"))

    # When the cancel is recorded, then delivered on the loop
    recorded = await database_sync_to_async(command_record)(
        Cancel(_sender(conversation, "http"), conversation, started.run_id)
    )
    result = await command_deliver(recorded)
    await _finish_runs()

    # Then it is the same typed result, and the run ended cancelled
    assert result == CancelRequested(started.run_id) and recorded.delivery == SendControl(
        started.run_id, CANCEL
    )
    assert (await Run.objects.unscoped().aget(pk=started.run_id)).status == RunStatus.CANCELLED


# -- cancel --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_cancel_without_an_active_run_has_nothing_to_cancel(chat):
    user, conversation = chat()
    done = RunFactory(conversation=conversation, status=RunStatus.DONE)

    assert command_record(Cancel(_sender(conversation), conversation)).result == NothingToCancel()
    assert command_record(Cancel(_sender(conversation), conversation, done.pk)).result == NothingToCancel(
        done.pk
    )


@pytest.mark.django_db
def test_a_cancel_naming_another_run_than_the_active_one_has_nothing_to_cancel(chat):
    user, conversation = chat()
    active = RunFactory(conversation=conversation, status=RunStatus.RUNNING)
    other = uuid.uuid4()

    recorded = command_record(Cancel(_sender(conversation), conversation, other))

    assert recorded.result == NothingToCancel(other) and recorded.delivery is None
    assert Run.objects.unscoped().get(pk=active.pk).status == RunStatus.RUNNING


@pytest.mark.django_db
def test_a_parked_run_is_cancelled_at_once_with_a_stored_cancelled_done(chat):
    user, conversation = chat()
    parked = RunFactory(conversation=conversation, status=RunStatus.PARKED)

    recorded = command_record(Cancel(_sender(conversation), conversation))

    assert recorded.result == Cancelled(parked.pk) and recorded.delivery is None
    assert Run.objects.unscoped().get(pk=parked.pk).status == RunStatus.CANCELLED
    assert RunEvent.objects.get(run=parked, event="done").data["cancelled"] is True


@pytest.mark.django_db
def test_a_working_run_is_sent_a_cancel(chat):
    user, conversation = chat()
    working = RunFactory(conversation=conversation, status=RunStatus.RUNNING)

    recorded = command_record(Cancel(_sender(conversation), conversation, working.pk))

    assert recorded.result == CancelRequested(working.pk)
    assert recorded.delivery == SendControl(working.pk, CANCEL)


# -- resume --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_resume_without_an_interrupted_run_is_refused(chat):
    user, conversation = chat()
    RunFactory(conversation=conversation, status=RunStatus.DONE)

    result = command_record(Resume(_sender(conversation), conversation)).result

    assert isinstance(result, Refused) and result.code == "nothing_to_resume"


@pytest.mark.django_db(transaction=True)
async def test_an_interrupted_run_resumes_in_this_process_and_answers(chat, scripted_llm):
    # Given a run whose lease lapsed (interrupted) before it answered
    scripted_llm.script(text("Order 7 has shipped."), text("Order 7 has shipped."))
    user, conversation = await database_sync_to_async(chat)()

    def interrupted() -> Run:
        run = RunFactory(conversation=conversation, status=RunStatus.INTERRUPTED)
        MessageFactory(conversation=conversation, run=run, content="Where is order 7?")
        return run

    run = await database_sync_to_async(interrupted)()

    # When it is resumed, and resumed again
    resumed = await command_handle(Resume(_sender(conversation), conversation, run.pk))
    again = await command_handle(Resume(_sender(conversation), conversation, run.pk))
    await _finish_runs()

    # Then it ran once more, to its answer; the second resume had nothing to resume
    assert resumed == RunResumed(run.pk)
    assert isinstance(again, Refused) and again.code == "nothing_to_resume"
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert (run.status, run.resumes, run.answer) == (RunStatus.DONE, 1, "Order 7 has shipped.")


# -- what is logged ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_result_is_logged_with_its_entry_point_and_without_the_message(chat, caplog):
    caplog.set_level(logging.DEBUG, logger="agents.conversations")
    user, conversation = chat()

    recorded = command_record(PostMessage(_sender(conversation, "openai"), conversation, "My card is 4111"))

    [record] = [r for r in caplog.records if hasattr(r, "conversation_result")]
    assert record.conversation_result == recorded.result and record.via == "openai"
    assert record.conversation_command == "post_message" and record.org_id == conversation.organization_id
    assert record.run_id == str(recorded.result.run_id)
    assert "4111" not in record.getMessage() and "4111" not in repr(vars(record))
