"""The admin's JavaScript widgets speak the page's language, in Debian's chromium under the strict policy.

The approval policy's ``filter_horizontal`` selectors (Django's SelectFilter2) build their captions,
filter box and buttons in the browser from the admin's JavaScript catalogue; under ``zh-hans`` every one
of them reads Chinese.
"""

from __future__ import annotations

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer

pytestmark = pytest.mark.e2e

ORG = "umbrella"
OWNER = "i18n-olga"

# SelectFilter2's strings of one selector ("actions", 操作), as the admin's catalogue translates them.
SELECTOR_TEXTS = {
    "zh-CN": ["可用 操作", "选中的 操作", "全选", "删除全部", "过滤"],
    "en-GB": ["Available actions", "Chosen actions", "Choose all", "Remove all", "Filter"],
}

ENGLISH_WORDS = ["Available", "Chosen", "Choose", "Remove", "Filter", "click"]


def build_policy_world() -> dict[str, str]:
    """An organisation with an owner, a connector with an action and an approval policy (run in a
    subprocess against the e2e server's database)."""
    from platform_core.models import Role
    from tests.factories import ConnectorActionFactory, ConnectorFactory, OrganizationFactory, member_of
    from tests.hooks.factories import ApprovalPolicyFactory

    org = OrganizationFactory(slug=ORG, name="Umbrella")
    member_of(org, Role.OWNER, username=OWNER)
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org, name="ledger"))
    policy = ApprovalPolicyFactory(organization=org, name="all ledger calls", actions=[action])
    return {"policy": str(policy.pk)}


@pytest.fixture(scope="module")
def policy_world(e2e_server: E2EServer) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_admin_translations:build_policy_world")


@pytest.mark.parametrize("locale", list(SELECTOR_TEXTS))
def test_the_policy_selectors_read_in_the_browsers_language(signed_in_page, e2e_server, policy_world, locale):
    page, errors = signed_in_page(OWNER, next="/admin/", width=1366, height=900, locale=locale)
    page.goto(f"{e2e_server.url}/admin/hooks/approvalpolicy/{policy_world['policy']}/change/")
    selector = page.locator("#id_actions_from").locator("xpath=ancestor::div[@class='selector']")
    expect(selector).to_be_visible()
    widget = (
        selector.inner_text() + " " + (selector.locator("input").first.get_attribute("placeholder") or "")
    )
    missing = [text for text in SELECTOR_TEXTS[locale] if text not in widget]
    assert not missing, f"{locale}: {missing} not in the selector: {widget!r}"
    if locale != "en-GB":
        english = [word for word in ENGLISH_WORDS if word in widget]
        assert not english, f"{locale}: the selector still says {english}: {widget!r}"
    assert errors == []
