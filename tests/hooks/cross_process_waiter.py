"""A run that waits for approval in its own process (``manage.py shell -c``), for the cross-process test.

Reads ``WAITER_LLM_URL`` and ``WAITER_ERP_URL`` from the environment, builds the purchasing organisation
in the process's database, and runs the real engine with the platform's tools and guard rails. Every
``approval`` event and the final tool outcomes are printed as JSON lines on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from django.conf import settings

from agents.engine.llm import OpenAICompatibleLLM
from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
from tests.hooks.factories import ApprovalPolicyFactory
from tests.hooks.harness import Emitted, run_agent
from tests.hooks.scenario import build_purchasing


class PrintingEmitted(Emitted):
    def __call__(self, channel, data):  # type: ignore[no-untyped-def]
        if channel == "approval":
            print(json.dumps({"event": "approval", **data}), flush=True)
        return super().__call__(channel, data)


def main() -> None:
    settings.APPROVAL_RECHECK_SECONDS = 0.2  # this process hears no channel-layer message: only the database
    world = build_purchasing(
        llm_base_url=os.environ["WAITER_LLM_URL"], erp_base_url=os.environ["WAITER_ERP_URL"], slug="waiter"
    )
    ApprovalPolicyFactory(
        organization=world.org,
        actions=[world.actions["create_payment"]],
        approver_users=[world.approver],
        timeout_seconds=120,
    )

    def make_llm() -> OpenAICompatibleLLM:
        return OpenAICompatibleLLM(
            base_url=os.environ["WAITER_LLM_URL"],
            api_key="sk-scripted-test",
            model="scripted-model",
            max_retries=0,
        )

    result = asyncio.run(run_agent(world, make_llm, "Pay 60000 CNY", emit=PrintingEmitted()))
    outcomes = [{"tool_call_id": r.tool_call_id, "outcome": r.outcome} for r in result.tool_calls]
    print(json.dumps({"event": "done", "tool_calls": outcomes}), flush=True)
    sys.stdout.flush()
