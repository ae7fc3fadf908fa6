"""A run's events and checkpoints are stored whatever they hold (issue #14, High), and without the run's
connector secrets (issue #14, Low).

Python's ``json.dumps`` writes NaN as ``NaN``, which SQLite's JSON check and PostgreSQL's ``jsonb`` refuse;
PostgreSQL also refuses NUL and lone surrogates in ``jsonb`` and ``text``. A batch that held one of them
used to fail whole, and the run lost every event and checkpoint of that batch. Run on both backends:
``DATABASE_URL=postgres://... pytest tests/agents/test_event_storage_values.py``.
"""

from __future__ import annotations

import math

import pytest
from channels.db import database_sync_to_async
from django.db import transaction

from agents.engine.durable.checkpoint import Checkpoint
from agents.models import Run, RunCheckpoint, RunEvent
from agents.runs.events.store import EventSink, Fence, event_append
from tests.agents.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "sk-erp-live-7f3a9c2e"

# Values that reach a run's events some other way than the (strict) model decoder: a tool's result, a
# hook's rewrite, a provider's reasoning text. Each must be stored, in a readable form.
UNSTORABLE = [
    pytest.param(math.nan, id="nan"),
    pytest.param(math.inf, id="infinity"),
    pytest.param(-math.inf, id="-infinity"),
    pytest.param("before\x00after", id="nul"),
    pytest.param("lone \ud800 surrogate", id="lone-surrogate"),
    pytest.param(b"\x00bytes", id="bytes"),
    pytest.param({"nested": [{"deep\x00key": math.nan}]}, id="nested"),
]


async def _run(owner: str) -> Run:
    return await database_sync_to_async(RunFactory)(status="running", lease_owner=owner)


def _checkpoint(value: object, *, text: str = "") -> Checkpoint:
    return Checkpoint(
        seq=1,
        state={"iteration": 1, "note": value},
        messages=[
            {"role": "user", "content": f"pay {text}"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "erp__pay", "arguments": f'{{"token": "{text}"}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": value if isinstance(value, str) else "ok"},
        ],
        records=[{"tool_call_id": "c1", "args": {"v": value, "token": text}}],
        reset=True,
    )


def _stored(run: Run) -> tuple[list[dict], list[dict], dict]:
    events = list(RunEvent.objects.filter(run_id=run.pk).order_by("seq").values_list("data", flat=True))
    checkpoints = list(RunCheckpoint.objects.filter(run_id=run.pk).values_list("data", flat=True))
    return events, checkpoints, Run.objects.unscoped().get(pk=run.pk).checkpoint


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced"])
@pytest.mark.parametrize("value", UNSTORABLE)
async def test_events_and_checkpoints_with_unstorable_values_are_stored(value, fenced):
    run = await _run("here#values")
    sink = EventSink(
        conversation_id=run.conversation_id,
        run_id=run.pk,
        first_seq=1,
        fence=Fence("here#values", 15) if fenced else None,
    )
    sink.emit("step", {"type": "iteration", "status": "start", "tool_args": {"v": value}})
    await sink.checkpoint(_checkpoint(value))
    sink.emit("step", {"type": "iteration", "status": "done", "observation": value})
    await sink.close()

    assert sink.failed is None
    events, checkpoints, latest = await database_sync_to_async(_stored)(run)
    assert len(events) == 2 and len(checkpoints) == 1 and latest["iteration"] == 1
    assert "\x00" not in str(events + checkpoints) and "\ud800" not in str(events + checkpoints)


@pytest.mark.parametrize("value", UNSTORABLE)
def test_an_event_appended_to_a_parked_run_is_stored_whatever_it_holds(value):
    run = RunFactory(status="parked")
    with transaction.atomic():
        row = event_append(
            run=Run.objects.unscoped().select_for_update().get(pk=run.pk), channel="step", data={"v": value}
        )
    row.refresh_from_db()
    assert "v" in row.data


async def test_the_runs_connector_secret_is_redacted_from_its_events_and_checkpoints():
    run = await _run("here#secret")
    sink = EventSink(
        conversation_id=run.conversation_id,
        run_id=run.pk,
        first_seq=1,
        fence=Fence("here#secret", 15),
        secrets=[SECRET, "short"],  # a short value is never searched for (it would mangle text)
    )
    sink.emit("step", {"type": "iteration", "status": "start", "tool_args": {"token": SECRET}})
    sink.emit("answer", {"status": "delta", "content": f"the key is {SECRET}, in short"})
    await sink.checkpoint(_checkpoint("fine", text=SECRET))
    await sink.close()

    events, checkpoints, _latest = await database_sync_to_async(_stored)(run)
    stored = str(events) + str(checkpoints)
    assert SECRET not in stored and "[redacted]" in stored and "in short" in stored
    assert events[0]["tool_args"] == {"token": "[redacted]"}
    assert (
        checkpoints[0]["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"token": "[redacted]"}'
    )
