"""Every kind of connector behind one protocol (connectors.kinds): each kind has its adapter, uses the
settings the admin form shows for it, and a kind that is not one of the choices is the kind field's error."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from connectors import fields
from connectors.admin import _form_fields_by_kind
from connectors.kinds import adapter_for, adapter_list
from connectors.models import Connector, ConnectorKind
from connectors.platform_kinds import kind_choice_error


def test_every_kind_has_an_adapter_of_its_own():
    assert [adapter.kind for adapter in adapter_list()] == [
        "http",
        "mcp",
        "database",
        "knowledge",
        "skills",
        "memory",
    ]
    for kind in ConnectorKind.values:
        assert adapter_for(kind).kind == kind


def test_a_kind_without_an_adapter_is_a_lookup_error():
    with pytest.raises(LookupError):
        adapter_for("ftp")


def test_each_kind_uses_its_settings_and_the_admin_form_shows_them():
    secrets = {"auth_secret", "dsn"}
    for adapter in adapter_list():
        assert set(adapter.settings) <= set(fields.EDITABLE) | secrets, adapter.kind
    assert _form_fields_by_kind() == {
        "http": [
            "base_url",
            "idempotency_header",
            *fields.AUTHENTICATION,
            "auth_secret_new",
            "auth_secret_clear",
            "connect_timeout",
            "read_timeout",
            "max_response_bytes",
            "allowed_private_hosts",
        ],
        "mcp": [
            "base_url",
            "mcp_transport",
            "mcp_command",
            *fields.AUTHENTICATION,
            "auth_secret_new",
            "auth_secret_clear",
            "connect_timeout",
            "read_timeout",
            "max_response_bytes",
            "allowed_private_hosts",
        ],
        "database": [
            "engine",
            "dsn_new",
            "dsn_clear",
            *fields.DATABASE_LIMITS,
            "connect_timeout",
            "max_response_bytes",
            "allowed_private_hosts",
        ],
        "knowledge": [],
        "skills": [],
        "memory": [],
    }


def test_a_knowledge_base_connector_is_neither_made_nor_unmade_by_the_connectors_form_or_api():
    assert "Knowledge bases" in kind_choice_error(None, "knowledge")
    assert "Knowledge bases" in kind_choice_error("http", "knowledge")
    assert kind_choice_error("knowledge", "http")
    assert kind_choice_error("knowledge", "knowledge") is None and kind_choice_error(None, "http") is None


def test_the_skill_library_connector_is_neither_made_nor_unmade_by_the_connectors_form_or_api():
    assert "first skill" in kind_choice_error(None, "skills")
    assert "first skill" in kind_choice_error("http", "skills")
    assert "first skill" in kind_choice_error("knowledge", "skills")
    assert "stays the skill library's" in kind_choice_error("skills", "http")
    assert kind_choice_error("skills", "skills") is None


@pytest.mark.django_db
def test_a_connector_of_an_unknown_kind_is_refused_by_its_kind_field_alone(org):
    connector = Connector(organization=org, name="legacy", kind="ftp", base_url="")
    with pytest.raises(ValidationError) as raised:
        connector.full_clean()
    assert set(raised.value.message_dict) == {"kind"}
