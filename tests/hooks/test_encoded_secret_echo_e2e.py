"""Issue #31: a target that echoes a connector's credential back encoded (base64 alone or inside
``user:secret`` at any byte alignment, URL-safe, URL-encoded, hex, upper-case, reversed) leaks it to no one.

Through the real run path: the websocket consumer, the run manager, the event writer, a connector tool
calling the loopback HTTP service's ``/echo-encoded`` route with the connector's credential, and the
scripted model. The model's next request, the stream, the stored events and checkpoints, and every row
of the platform's tables hold none of the echoes.
"""

from __future__ import annotations

import base64
import json

import pytest
from channels.db import database_sync_to_async
from django.apps import apps

from connectors.models import Connector, ConnectorCallLog
from tests.agents.ws_helpers import ask_until_done
from tests.factories import ConnectorActionFactory
from tests.fakes.http_service import Scripted, encoded_echoes
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.scenario import add_query_action, build_purchasing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]

SECRET = "sk-erp-Live-7f3a9c2e41"
APPS = ("agents", "connectors", "hooks", "platform_core")


@pytest.fixture(params=["bearer", "basic"])
async def world(request, scripted_llm, http_service):
    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        erp = Connector.objects.unscoped().get(pk=world.erp.pk)
        erp.auth_type = request.param
        erp.auth_username = "admin" if request.param == "basic" else ""
        erp.auth_secret = SECRET
        erp.save()
        world.erp = erp
        add_query_action(erp, "diagnose", "/echo-encoded", param="status", json_type="string")
        return world

    return await database_sync_to_async(build)()


def _echoes(authorization: str) -> list[str]:
    """What must appear nowhere: the credential, the header carrying it, and each echo of it."""
    return sorted({SECRET, authorization.split()[-1], *encoded_echoes(authorization).values()})


def _every_row() -> str:
    rows = []
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            rows += [str(row) for row in model._base_manager.values()]  # every row, any organisation
    return "\n".join(rows)


async def test_a_credential_echoed_back_encoded_reaches_neither_the_model_nor_the_events_nor_the_database(
    world, scripted_llm, http_service
):
    # given a target that answers with the connector's credential in many encodings, once with 200 and
    # once with an error status (not retried) (which also lands in the call log's error)
    scripted_llm.script(
        tool_calls(call("erp__diagnose", {}, id="echo-ok")),
        tool_calls(call("erp__diagnose", {"status": "400"}, id="echo-error")),
        text("Diagnosed."),
        text("Diagnosed."),
    )
    # when a run calls it twice
    frames = await ask_until_done(world.conversation.pk, world.requester, "Diagnose the ERP")

    # then the target did echo it, encoded (the credential really went out)
    sent = http_service.requests_to("/echo-encoded")
    assert len(sent) == 2
    echoes = _echoes(sent[0].headers["authorization"])
    # and the model saw the calls' results, redacted
    observations = [m["content"] for m in scripted_llm.requests[2]["messages"] if m["role"] == "tool"]
    assert len(observations) == 2 and all("[redacted]" in o for o in observations)
    seen = {
        "model requests": str(scripted_llm.requests),
        "stream": str(frames),
        "database": await database_sync_to_async(_every_row)(),
    }
    for where, content in seen.items():
        leaked = [echo for echo in echoes if echo in content]
        assert leaked == [], f"{where} hold {leaked}"
    error_row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="echo-error")
    assert error_row.error.startswith("HTTP 400") and "[redacted]" in error_row.error


LEDGER_PASSWORD = "ledger-Pw-9d2f71c3"


async def test_a_target_that_answers_another_connectors_secret_leaks_it_to_no_one(scripted_llm, http_service):
    """Redaction covers every connector of the run, not only the one called: the ERP's target answering
    the ledger's password (as text and in base64) is redacted before the model sees it."""
    leak = f"db password {LEDGER_PASSWORD} / {base64.b64encode(LEDGER_PASSWORD.encode()).decode()}"

    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        ledger = Connector.objects.unscoped().get(pk=world.ledger.pk)
        ledger.dsn = f"postgresql://reader:{LEDGER_PASSWORD}@127.0.0.1:5432/postgres?connect_timeout=3"
        ledger.save()
        ConnectorActionFactory(connector=world.erp, name="gossip", method="GET", path_template="/gossip")
        return world

    world = await database_sync_to_async(build)()
    http_service.script("/gossip", Scripted(200, json.dumps({"note": leak})))
    scripted_llm.script(tool_calls(call("erp__gossip", {}, id="gossip")), text("Done."), text("Done."))

    frames = await ask_until_done(world.conversation.pk, world.requester, "What does the ERP say?")

    assert len(http_service.requests_to("/gossip")) == 1
    observation = next(m["content"] for m in scripted_llm.requests[1]["messages"] if m["role"] == "tool")
    assert "[redacted]" in observation
    for where, content in {"model requests": str(scripted_llm.requests), "stream": str(frames)}.items():
        assert LEDGER_PASSWORD not in content, where
        assert base64.b64encode(LEDGER_PASSWORD.encode()).decode() not in content, where
