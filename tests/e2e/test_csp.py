"""The pages work under the strict Content-Security-Policy, in Debian's chromium.

A recorder collects every ``securitypolicyviolation`` event, console error and uncaught page error while
the tests walk the chat (a message, its streamed answer over the websocket), the language switch, the
approvals inbox and an approval's page (a decision posted), and admin pages (changelist with its action
bar, change forms with filter_horizontal widgets, the Feishu channel and the approval policy, the add
popup of a related object). Every walk ends with zero violations and errors, and the recorder is shown
to catch a violation first, so a silent recorder cannot pass for a clean page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.e2e.browser_pages import EXPECT_TIMEOUT_MS, expect, submit_sign_in
from tests.e2e.chat_pages import open_new_chat
from tests.e2e.conftest import E2EServer, wait_for
from tests.fakes.openai_server import text

pytestmark = pytest.mark.e2e

ADMIN_ORG = "initech"
ADMIN_USER = "csp-ada"
ANSWER = "Two purchase orders are **drafts**: PO-0002 and PO-0003."

# Runs in every document before its own scripts; the page's policy does not apply to it.
RECORDER_SCRIPT = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolation({
    page: location.pathname, directive: e.violatedDirective, blocked: e.blockedURI,
    source: e.sourceFile, line: e.lineNumber, sample: e.sample,
  });
});
"""


@dataclass
class PolicyRecorder:
    """What the browser refused or failed at on the pages of one context."""

    violations: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def attach(self, context) -> None:
        context.expose_function("__cspViolation", self._violation)
        context.add_init_script(RECORDER_SCRIPT)
        context.on("page", self._watch)

    def _violation(self, report: dict) -> None:
        self.violations.append(report)

    def _console(self, message) -> None:
        url = message.location.get("url", "")
        # The browser's own probe for a site icon is not the page's doing (the site has none).
        if message.type == "error" and not url.endswith("/favicon.ico"):
            self.errors.append(f"{message.text} ({url})")

    def _watch(self, page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def settle(self, page) -> None:
        """A round trip to the page, so reports sent before it have arrived."""
        page.evaluate("() => new Promise((done) => setTimeout(done, 50))")

    def assert_clean(self, page) -> None:
        self.settle(page)
        assert self.violations == [] and self.errors == [], json.dumps(
            {"violations": self.violations, "errors": self.errors}, indent=2
        )


def build_admin_world() -> dict[str, str]:
    """An organisation of its own with an owner, a connector, an agent, a Feishu channel, a policy and a
    pending approval (run in a subprocess against the e2e server's database; the chat's org is untouched)."""
    from platform_core.models import Role
    from tests.factories import ConnectorActionFactory, ConnectorFactory, OrganizationFactory, member_of
    from tests.agents.factories import AgentFactory  # isort: skip (after tests.factories, which it imports)
    from tests.hooks.factories import ApprovalPolicyFactory, ApprovalRequestFactory, FeishuChannelFactory

    org = OrganizationFactory(slug=ADMIN_ORG, name="Initech")
    owner = member_of(org, Role.OWNER, username=ADMIN_USER)
    first = ConnectorFactory(organization=org, name="billing")
    second = ConnectorFactory(organization=org, name="inventory")
    action = ConnectorActionFactory(connector=first)
    agent = AgentFactory(organization=org, name="Initech helper")
    agent.connectors.set([first])
    channel = FeishuChannelFactory(organization=org, name="approvals-room")
    policy = ApprovalPolicyFactory(
        organization=org, name="big payments", channel=channel, actions=[action], connectors=[second]
    )
    approval = ApprovalRequestFactory(organization=org, policy=policy, approver_users=[owner])
    return {
        "agent": str(agent.pk),
        "connector": str(first.pk),
        "second_connector": second.name,
        "channel": str(channel.pk),
        "policy": str(policy.pk),
        "approval": str(approval.pk),
    }


@pytest.fixture(scope="module")
def admin_world(e2e_server: E2EServer) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_csp:build_admin_world")


@pytest.fixture
def recorded(browser) -> Iterator[tuple[object, PolicyRecorder]]:
    """A new browser context whose pages report to a recorder."""
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    recorder = PolicyRecorder()
    recorder.attach(context)
    try:
        yield context, recorder
    finally:
        context.close()


def _open(page, url: str):
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: {response and response.status}"
    assert "script-src 'self'" in response.headers.get("content-security-policy", ""), url
    return response


def _sign_in(page, server: E2EServer, username: str, password: str, landing: str) -> None:
    _open(page, f"{server.url}/login/?next={landing}")
    submit_sign_in(page, username, password)
    page.wait_for_url(f"**{landing}")


def test_the_recorder_reports_an_inline_script_the_policy_blocks(recorded, e2e_server):
    context, recorder = recorded
    page = context.new_page()
    _open(page, f"{e2e_server.url}/login/")
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1';"
        " document.body.append(s); }"
    )
    recorder.settle(page)
    assert page.evaluate("() => window.__ran") is None
    assert [v["directive"] for v in recorder.violations] == ["script-src-elem"]


def test_chat_streams_an_answer_over_the_websocket_under_the_policy(recorded, e2e_server, scripted_llm):
    from tests.e2e.conftest import PASSWORD

    scripted_llm.script(text(ANSWER, chunk_size=8))
    context, recorder = recorded
    page = context.new_page()
    _sign_in(page, e2e_server, e2e_server.world["username"], PASSWORD, "/o/acme/chat/")

    open_new_chat(page)
    page.fill("#composer-input", "Which purchase orders are still drafts?")
    page.press("#composer-input", "Enter")
    # connect-src 'self' lets the page open its ws: socket to the same host (CSP3).
    expect(page.locator(".conn")).to_have_attribute("data-state", "open")
    expect(page.locator(".answer strong")).to_have_text("drafts")
    expect(page.locator(".run-footer")).to_be_visible()
    recorder.assert_clean(page)


def test_the_language_switch_submits_itself_under_the_policy(recorded, e2e_server):
    context, recorder = recorded
    page = context.new_page()
    _open(page, f"{e2e_server.url}/login/")
    with page.expect_navigation():
        page.select_option("form.lang select[name=language]", "zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    recorder.assert_clean(page)


def test_approvals_inbox_and_an_approval_decision_work_under_the_policy(recorded, e2e_server, admin_world):
    from tests.factories import PASSWORD

    context, recorder = recorded
    page = context.new_page()
    inbox = f"/o/{ADMIN_ORG}/approvals/"
    _sign_in(page, e2e_server, ADMIN_USER, PASSWORD, inbox)
    _open(page, f"{e2e_server.url}{inbox}")
    expect(page.locator("table.approvals")).to_contain_text("erp__create_payment")
    # The moved stylesheet applies: the table is full width, not the browser's default.
    assert page.locator("table.approvals").evaluate("(t) => getComputedStyle(t).borderCollapse") == "collapse"

    _open(page, f"{e2e_server.url}{inbox}{admin_world['approval']}/")
    expect(page.locator("pre.arguments")).to_contain_text("60000")
    page.fill("#comment", "Too much for this quarter.")
    page.click("form.decide button[value=reject]")
    expect(page.locator("dd.status-rejected")).to_be_visible()
    recorder.assert_clean(page)


def test_admin_pages_and_their_widgets_work_under_the_policy(recorded, e2e_server, admin_world):
    from tests.factories import PASSWORD

    context, recorder = recorded
    page = context.new_page()
    admin = f"{e2e_server.url}/admin"
    _sign_in(page, e2e_server, ADMIN_USER, PASSWORD, "/admin/")

    # A changelist: the action bar's counter is driven by actions.js.
    _open(page, f"{admin}/agents/agent/")
    page.locator("input.action-select").first.check()
    expect(page.locator(".action-counter")).to_contain_text("1 of")

    # An agent's form: filter_horizontal is built by SelectFilter2.js; moving a connector and saving works.
    _open(page, f"{admin}/agents/agent/{admin_world['agent']}/change/")
    expect(page.locator("#id_connectors_from")).to_be_visible()
    page.select_option("#id_connectors_from", label=admin_world["second_connector"])
    page.click("#id_connectors_add")
    expect(page.locator("#id_connectors_to option")).to_have_count(2)
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_be_visible()
    links = wait_for(
        lambda: (
            e2e_server.query(
                "SELECT COUNT(*) FROM agents_agent_connectors WHERE agent_id = ?",
                (admin_world["agent"].replace("-", ""),),
            )[0][0]
            == 2
        ),
        what="the agent's second connector to be saved",
    )
    assert links

    # The Feishu channel and the approval policy (three filter_horizontal widgets) render their widgets.
    _open(page, f"{admin}/hooks/feishuchannel/{admin_world['channel']}/change/")
    expect(page.locator("input[name=_save]")).to_be_visible()
    _open(page, f"{admin}/hooks/approvalpolicy/{admin_world['policy']}/change/")
    for name in ("actions", "connectors", "approver_users"):
        expect(page.locator(f"#id_{name}_from")).to_be_visible()
    expect(page.locator("#id_connectors_to option")).to_have_count(1)

    # The connector's page with its own object tools (styles moved to static/css/admin.css).
    _open(page, f"{admin}/connectors/connector/{admin_world['connector']}/change/")
    button = page.locator(".object-tools button.historylink")
    expect(button).to_be_visible()
    assert button.evaluate("(b) => getComputedStyle(b).cursor") == "pointer"

    # "Add another" opens a popup; saving it answers through popup_response.js into the opener's select.
    _open(page, f"{admin}/hooks/approvalpolicy/add/")
    with page.expect_popup() as popup_info:
        page.click("#add_id_channel")
    popup = popup_info.value
    popup.wait_for_load_state()
    popup.fill("#id_name", "popup-channel")
    popup.fill("#id_app_id", "cli_popup")
    with popup.expect_event("close"):
        popup.click("input[name=_save]")
    expect(page.locator("#id_channel option:checked")).to_have_text("popup-channel")
    recorder.assert_clean(page)


def test_the_browsable_api_works_under_the_policy(recorded, e2e_server, admin_world):
    """DRF's scripts run and its layout holds; the only reports are DRF's own style attributes, which
    the policy ignores and static/css/api.css replaces."""
    from tests.factories import PASSWORD

    context, recorder = recorded
    page = context.new_page()
    connector = f"/api/v1/orgs/{ADMIN_ORG}/connectors/{admin_world['connector']}/"
    _sign_in(page, e2e_server, ADMIN_USER, PASSWORD, "/")
    _open(page, f"{e2e_server.url}{connector}")
    expect(page.locator(".response-info pre span.str").first).to_be_visible()  # prettify.js coloured the JSON
    menu = page.locator(".region > .dropdown")
    assert menu.evaluate("(m) => getComputedStyle(m).float") == "right"
    page.click("#extra-actions-menu")
    expect(page.locator("ul[aria-labelledby=extra-actions-menu]")).to_be_visible()  # bootstrap.js ran
    recorder.settle(page)
    assert {v["directive"] for v in recorder.violations} <= {"style-src-attr"}
    recorder.violations.clear()
    recorder.errors[:] = [e for e in recorder.errors if not e.startswith("Applying inline style violates")]
    recorder.assert_clean(page)
