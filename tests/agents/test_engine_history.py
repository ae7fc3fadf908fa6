"""The history a run's engine gets: the conversation before its question, from the newest compaction
summary (and the start of the run that wrote it) on, in one statement."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import MessageRole
from agents.selectors import engine_history
from tests.agents.factories import ConversationFactory, MessageFactory, RunFactory

pytestmark = pytest.mark.django_db


def _say(conversation, run, role, content, **extra):
    return MessageFactory(conversation=conversation, run=run, role=role, content=content, **extra)


def test_without_a_summary_the_whole_conversation_is_the_history_and_follow_ups_are_pinned():
    conversation = ConversationFactory()
    first = RunFactory(conversation=conversation, status="done")
    _say(conversation, first, MessageRole.USER, "Q1")
    _say(conversation, first, MessageRole.USER, "and also", injected=True, pinned=True)
    _say(conversation, first, MessageRole.ASSISTANT, "A1")
    question = _say(conversation, RunFactory(conversation=conversation), MessageRole.USER, "Q2")

    with CaptureQueriesContext(connection) as queries:
        history = engine_history(conversation_id=conversation.pk, before_message_id=question.pk)

    assert history == [
        {"role": "user", "content": "Q1"},
        {"role": "user", "content": "and also", "_pinned": True},
        {"role": "assistant", "content": "A1"},
    ]
    assert len(queries) == 1


def test_the_history_starts_at_the_newest_summary_and_the_run_that_wrote_it():
    conversation = ConversationFactory()
    old = RunFactory(conversation=conversation, status="done")
    _say(conversation, old, MessageRole.USER, "Q0")
    _say(conversation, old, MessageRole.SUMMARY, "older summary", pinned=True)
    _say(conversation, old, MessageRole.ASSISTANT, "A0")
    gone = RunFactory(conversation=conversation, status="done")
    _say(conversation, gone, MessageRole.USER, "Q1")
    summarised = RunFactory(conversation=conversation, status="done")
    _say(conversation, summarised, MessageRole.USER, "Q2")
    _say(conversation, summarised, MessageRole.SUMMARY, "newest summary", pinned=True)
    _say(conversation, summarised, MessageRole.ASSISTANT, "A2")
    question = _say(conversation, RunFactory(conversation=conversation), MessageRole.USER, "Q3")
    _say(conversation, None, MessageRole.USER, "after the question")
    elsewhere = ConversationFactory()
    _say(elsewhere, RunFactory(conversation=elsewhere), MessageRole.SUMMARY, "not this one")

    history = engine_history(conversation_id=conversation.pk, before_message_id=question.pk)

    assert history == [
        {"role": "user", "content": "newest summary", "_summary": True, "_pinned": True},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2"},
    ]


def test_a_summary_whose_run_was_deleted_starts_the_history_at_the_first_message_without_a_run():
    conversation = ConversationFactory()
    _say(conversation, None, MessageRole.USER, "Q0")
    run = RunFactory(conversation=conversation, status="done")
    _say(conversation, run, MessageRole.USER, "Q1")
    _say(conversation, run, MessageRole.SUMMARY, "summary", pinned=True)
    run.delete()
    question = _say(conversation, RunFactory(conversation=conversation), MessageRole.USER, "Q2")

    history = engine_history(conversation_id=conversation.pk, before_message_id=question.pk)

    assert [m["content"] for m in history] == ["summary", "Q0", "Q1"]
