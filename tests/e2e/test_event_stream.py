"""A run's HTTP event stream read by a real browser's ``EventSource`` (Chat over HTTP, README).

A signed-in user's page (the session cookie is the browser's credential: ``EventSource`` cannot send an
``Authorization`` header) posts a question and opens ``new EventSource(stream_url)``. The server drops
the connection mid-run: this daphne runs with ``--http-timeout 3``, which ends any response still open
after three seconds, as a proxy's timeout would, while the model is still thinking. The browser
reconnects by itself with ``Last-Event-ID`` and receives the rest: every stored event exactly once, in
order.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.browser_pages import sign_in
from tests.e2e.conftest import PASSWORD, E2EServer, free_port, wait_for
from tests.fakes.openai_server import call, hang, text, tool_calls

pytestmark = pytest.mark.e2e

HTTP_TIMEOUT_SECONDS = 3
QUESTION = "Which purchase orders are still drafts?"
ANSWER = "Two purchase orders are still drafts: PO-0002 and PO-0003."
CHANNELS = ["step", "answer", "compact", "phase", "inject", "approval", "plan", "error", "done"]

# The page's own code: create a conversation, ask, and follow the run with EventSource.
ASK_AND_FOLLOW = """
async ({agent, question, channels}) => {
  const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrftoken=")).split("=")[1];
  const post = async (url, body) => {
    const response = await fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const base = "/api/v1/orgs/acme/conversations/";
  const conversation = await post(base, {agent});
  const posted = await post(`${base}${conversation.id}/messages/`, {content: question});
  window.__events = [];
  window.__opens = 0;
  window.__done = false;
  const source = new EventSource(posted.stream_url);
  source.onopen = () => { window.__opens += 1; };
  for (const name of channels) {
    source.addEventListener(name, (event) => {
      window.__events.push({id: event.lastEventId, type: event.type, frame: JSON.parse(event.data)});
      if (name === "done") { source.close(); window.__done = true; }
    });
  }
  return {conversation: conversation.id, run: posted.run_id, stream: posted.stream_url};
}
"""


@pytest.fixture(scope="module")
def dropping_server(e2e_server: E2EServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2EServer]:
    """A second daphne on the same database whose responses last at most ``HTTP_TIMEOUT_SECONDS``."""
    folder = tmp_path_factory.mktemp("e2e-dropping")
    server = E2EServer(
        port=free_port(),
        database=e2e_server.database,
        log_path=folder / "daphne.log",
        env=e2e_server.env,
        world=e2e_server.world,
        daphne_args=["--http-timeout", str(HTTP_TIMEOUT_SECONDS)],
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_browsers_eventsource_follows_a_run_and_resumes_with_last_event_id_after_a_drop(
    browser, dropping_server, scripted_llm
):
    # Given a model that calls the ERP, then thinks longer than the server keeps a response open
    scripted_llm.script(
        tool_calls(call("erp__list_purchase_orders", {"status": "draft"}, id="call_orders")),
        hang(HTTP_TIMEOUT_SECONDS + 4, then=text("Two drafts.")),
        text(ANSWER, chunk_size=8),
    )
    context = browser.new_context()
    try:
        page = context.new_page()
        sign_in(page, dropping_server.url, dropping_server.world["username"], PASSWORD, "/o/acme/chat/")
        streams = []
        page.on("request", lambda request: streams.append(request) if "/stream/" in request.url else None)

        # When the signed-in page asks and follows the run with EventSource
        asked = page.evaluate(
            ASK_AND_FOLLOW,
            {"agent": dropping_server.world["agent"], "question": QUESTION, "channels": CHANNELS},
        )
        wait_for(lambda: page.evaluate("window.__done"), timeout=40, what="the run's done event")
        events = page.evaluate("window.__events")
        opens = page.evaluate("window.__opens")
        headers = [request.all_headers() for request in streams]
    finally:
        context.close()

    # Then the browser read the stream (its Accept: text/event-stream is served) and got every stored
    # event exactly once, in order, with the seq as the event's id
    stored = dropping_server.query(
        "SELECT seq, event FROM agents_runevent WHERE run_id = ? ORDER BY seq",
        (asked["run"].replace("-", ""),),
    )
    assert [(e["frame"]["seq"], e["frame"]["event"]) for e in events] == [tuple(row) for row in stored]
    assert [e["id"] for e in events] == [str(e["frame"]["seq"]) for e in events]
    assert events[-1]["frame"]["event"] == "done" and events[-1]["frame"]["data"]["answer"] == ANSWER
    # the connection was dropped mid-run and the browser reconnected by itself, with Last-Event-ID
    assert opens >= 2 and len(headers) >= 2
    assert headers[0]["accept"] == "text/event-stream" and "last-event-id" not in headers[0]
    resumed_after = int(headers[1]["last-event-id"])
    assert 0 < resumed_after < events[-1]["frame"]["seq"]
