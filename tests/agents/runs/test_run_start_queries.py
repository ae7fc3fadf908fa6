"""A run started from the chat socket does not read back what its start just wrote: its question, its
run row, its lease. Counted over every thread (the socket's and the runs' database work run on the
process's one database thread)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from django.db.backends import utils

from agents.models import Message, MessageRole, Run
from agents.runs.manager import run_manager
from tests.agents.ws_helpers import bearer_for, connect, frames_until_done
from tests.fakes.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)


class Statements(list[str]):
    """Every SQL statement any thread runs while ``recording`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = threading.Event()


@pytest.fixture
def statements(monkeypatch) -> Iterator[Statements]:
    seen = Statements()
    real = utils.CursorWrapper._execute

    def execute(self, sql, params, *ignored):
        if seen.recording.is_set():
            seen.append(sql)
        return real(self, sql, params, *ignored)

    monkeypatch.setattr(utils.CursorWrapper, "_execute", execute)
    yield seen


async def _ask(ws, question: str) -> None:
    await ws.send_json_to({"type": "message", "content": question})
    await frames_until_done(ws)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def _second_question_statements(chat, scripted_llm, statements) -> list[str]:
    scripted_llm.script(text("First answer."), text("First answer."), text("Second."), text("Second."))
    user, conversation = await database_sync_to_async(chat)()
    ws, connected, _ = await connect(conversation.pk, await bearer_for(user))
    assert connected
    await _ask(ws, "The first question")
    statements.recording.set()
    await _ask(ws, "The second question")
    statements.recording.clear()
    await ws.disconnect()
    return list(statements)


def _start_of_run(found: list[str]) -> list[str]:
    """The run's statements from its start up to its first stored event (transaction control left out)."""
    begin = next(i for i, sql in enumerate(found) if 'FROM "agents_run"' in sql and "COUNT" in sql)
    # its first event batch: the lease renewal that fences it, or (PostgreSQL) the one statement of both
    end = next(
        i
        for i, sql in enumerate(found)
        if i > begin and ('INSERT INTO "agents_runevent"' in sql or 'SET "lease_expires_at"' in sql)
    )
    control = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT")
    return [sql for sql in found[begin:end] if not sql.startswith(control)]


async def test_a_run_started_from_the_socket_reads_back_neither_its_run_nor_its_question(
    chat, scripted_llm, statements
):
    start = _start_of_run(await _second_question_statements(chat, scripted_llm, statements))

    reads = [sql for sql in start if sql.startswith("SELECT") and 'FROM "agents_run"' in sql]
    assert [sql for sql in reads if "COUNT" not in sql] == []  # only the user's running runs
    assert not [sql for sql in start if 'SET "lease_owner"' in sql]  # the lease came with the INSERT
    assert len([sql for sql in start if 'FROM "agents_message"' in sql]) == 1  # its history, once


async def test_a_run_takes_seven_statements_from_its_start_to_its_first_event(chat, scripted_llm, statements):
    start = _start_of_run(await _second_question_statements(chat, scripted_llm, statements))

    # the user's running runs, the run (with its lease), its question, the conversation's title and
    # time, its last event seq, the conversation with its agent, the history
    assert len(start) == 7, start


async def test_a_run_started_from_the_socket_holds_its_lease_and_records_its_question(
    chat, scripted_llm, statements
):
    await _second_question_statements(chat, scripted_llm, statements)

    runs = await database_sync_to_async(lambda: list(Run.objects.unscoped().order_by("started_at")))()
    assert [(r.status, r.lease_owner) for r in runs] == [("done", ""), ("done", "")]
    questions = await database_sync_to_async(
        lambda: list(
            Message.objects.filter(role=MessageRole.USER).order_by("id").values_list("content", flat=True)
        )
    )()
    assert questions == ["The first question", "The second question"]
