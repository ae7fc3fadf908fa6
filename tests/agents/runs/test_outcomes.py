"""What a run's task comes to: each ended outcome finishes the run in its own status, and its figures
reach ``run_finish`` with the stop reason as the plain string the database and the events keep."""

from __future__ import annotations

import pytest

from agents.engine.stop_reasons import StopReason
from agents.models import Run, RunStatus
from agents.runs import lifecycle
from agents.runs.outcomes import NOT_STARTED, Cancelled, Done, Failed
from tests.agents.factories import RunFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("outcome", "status", "stop_reason"),
    [
        (Done(1.5, StopReason.FINAL_ANSWER, answer="42", iterations=2), RunStatus.DONE, "final_answer"),
        (Cancelled(0.5), RunStatus.CANCELLED, "cancelled"),
        (Failed(0.1, StopReason.ERROR, error="boom"), RunStatus.FAILED, "error"),
        (NOT_STARTED, RunStatus.FAILED, ""),
    ],
)
def test_an_ended_outcome_finishes_the_run_in_its_status_with_its_stop_reason(outcome, status, stop_reason):
    fields = outcome.finish_fields()
    assert fields["status"] == status and type(fields["stop_reason"]) is str
    run = RunFactory(status=RunStatus.RUNNING, lease_owner="me")
    assert lifecycle.run_finish(run_id=run.pk, lease_owner="me", **fields)
    run = Run.objects.unscoped().get(pk=run.pk)
    assert (run.status, run.stop_reason) == (status, stop_reason)
