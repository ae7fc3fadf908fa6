"""The ASGI application of ``ws_load.py``'s A/B rounds: the platform's own, with usage accounting taken
out when ``BENCH_ACCOUNTING=off`` (benchmark only: the platform has no switch for it, on purpose).

    python -m daphne ... benchmarks.ws_load_wiring:application

Off, a run is wired as before accounting existed: the run manager gets no
:class:`~agents.usage.meter.RunMeter` (so the runtime builds its models without
:class:`~agents.engine.metering.MeteredLLM`, no cost is computed and no ``UsageRecord`` row joins the event
batch), and the run's blueprint loads no budgets (one query per run). Any other value, or none, leaves the
platform exactly as production runs it. Tracing needs no swap: ``OTEL_EXPORTER_OTLP_ENDPOINT`` turns it on.
"""

from __future__ import annotations

import os
from typing import Any

from platform_core.wiring.asgi import application

__all__ = ["application"]


def _without_accounting() -> None:
    from agents import runtime

    def no_meter(blueprint: Any, sink: Any) -> None:
        return None

    def no_budgets(**owner: Any) -> list[Any]:
        return []

    # Both are looked up on the module when called: the run manager calls runtime.meter_for, the blueprint
    # builder (in runtime itself) budgets_for_run.
    runtime.meter_for = no_meter  # type: ignore[assignment]
    runtime.budgets_for_run = no_budgets  # type: ignore[assignment]


if os.environ.get("BENCH_ACCOUNTING") == "off":
    _without_accounting()
