"""A connector's admin page in Debian's chromium under the strict policy: the form shows the sections of the
chosen kind only (switching the kind switches them), and a database connector's actions table has the
columns of database actions, its schema tools marked as generated."""

from __future__ import annotations

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer

pytestmark = pytest.mark.e2e

ORG = "conn-form-org"
OWNER = "conn-form-carla"


def build_connector_form_world() -> dict[str, str]:
    """An organisation, its owner and a database connector with its schema tools (run against the e2e
    server's database)."""
    from connectors.models import ensure_schema_tools
    from platform_core.models import Role
    from tests.factories import ConnectorFactory, OrganizationFactory, member_of

    org = OrganizationFactory(slug=ORG, name="Connector forms")
    member_of(org, Role.OWNER, username=OWNER)
    database = ConnectorFactory(
        organization=org,
        kind="database",
        base_url="",
        name="ledger",
        dsn="postgresql://reader:pw-123456789@db.example.com/erp",
    )
    ensure_schema_tools(database)
    return {"database": str(database.pk)}


@pytest.fixture(scope="module")
def form_world(e2e_server: E2EServer) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_connector_form:build_connector_form_world")


@pytest.fixture
def admin_page(signed_in_page, form_world):
    return signed_in_page(OWNER)


def _sections(page):
    return {
        "server": page.locator("fieldset.connector-server"),
        "mcp": page.locator("fieldset.connector-mcp"),
        "database": page.locator("fieldset.connector-database"),
        "auth": page.locator("fieldset.connector-authentication"),
    }


def test_a_new_connector_shows_only_the_fields_of_its_kind(admin_page, e2e_server):
    page, errors = admin_page
    page.goto(f"{e2e_server.url}/admin/connectors/connector/add/")
    sections = _sections(page)

    # HTTP, the default kind: its address, authentication and limits; no SQL, no MCP transport.
    expect(sections["server"]).to_be_visible()
    expect(page.locator("#id_base_url")).to_be_visible()
    expect(sections["auth"]).to_be_visible()
    expect(sections["database"]).to_be_hidden()
    expect(sections["mcp"]).to_be_hidden()
    expect(page.locator("#id_dsn_new")).to_be_hidden()
    http_height = page.evaluate("document.documentElement.scrollHeight")

    page.select_option("#id_kind", "database")
    expect(sections["database"]).to_be_visible()
    expect(page.locator("#id_dsn_new")).to_be_visible()
    expect(page.locator("#id_base_url")).to_be_hidden()
    expect(page.locator("#id_idempotency_header")).to_be_hidden()
    expect(sections["auth"]).to_be_hidden()
    expect(sections["mcp"]).to_be_hidden()
    # Actions of a new database connector are its generated schema tools and what is added after saving.
    expect(page.locator("#actions-group")).to_be_hidden()

    page.select_option("#id_kind", "mcp")
    expect(sections["mcp"]).to_be_visible()
    expect(page.locator("#id_base_url")).to_be_visible()
    expect(page.locator("#id_idempotency_header")).to_be_hidden()
    expect(sections["database"]).to_be_hidden()

    page.select_option("#id_kind", "http")
    expect(sections["database"]).to_be_hidden()
    expect(page.locator("#actions-group")).to_be_visible()
    # The whole page of an HTTP connector fits in well under two screens (it was 2,778 px with every kind).
    assert http_height < 2000, http_height
    assert errors == []


def test_a_database_connectors_actions_table_has_database_columns(admin_page, e2e_server, form_world):
    page, errors = admin_page
    page.goto(f"{e2e_server.url}/admin/connectors/connector/{form_world['database']}/change/")
    table = page.locator("#actions-group table")
    headers = table.locator("thead th")

    expect(headers.filter(has_text="SQL template")).to_have_count(1)
    expect(headers.filter(has_text="Free-form")).to_have_count(1)
    expect(headers.filter(has_text="HTTP method")).to_have_count(0)
    expect(headers.filter(has_text="Path template")).to_have_count(0)
    expect(headers.filter(has_text="MCP")).to_have_count(0)

    list_tables = table.locator("tr", has=page.locator("input[value='list_tables']"))
    expect(list_tables).to_contain_text("Generated from the database schema")
    saved = table.locator("tr.has_original")
    expect(saved).to_have_count(2)
    for row in saved.all():
        expect(row).not_to_contain_text("Created by hand")
    # The kind's own sections only, on a saved connector too.
    expect(page.locator("fieldset.connector-database")).to_be_visible()
    expect(page.locator("fieldset.connector-server")).to_be_hidden()
    assert errors == []
