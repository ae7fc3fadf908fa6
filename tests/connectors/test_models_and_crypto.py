"""Connector models: secrets encrypted at rest and bound to their row, key rotation, derived is_write."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from connectors.models import Connector, ConnectorAction
from platform_core.crypto import SecretDecryptError, encrypted_fields
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

API_KEY = "sk-live-4f9a8b7c6d5e"
DSN = "postgresql://reporter:Hunter2-db-pass@db.internal:5432/erp"


def _raw_row(connector: Connector) -> tuple[str, str]:
    """The stored columns, read with SQL around the model (hex UUIDs work on SQLite and PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT auth_secret, dsn FROM connectors_connector WHERE id = %s", [connector.pk.hex])
        return cursor.fetchone()


def _set_raw(connector: Connector, column: str, value: str) -> None:
    table = Connector._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", [value, connector.pk.hex])


def test_the_raw_database_row_holds_no_plaintext_credential(org):
    connector = ConnectorFactory(organization=org, auth_type="api_key_header", auth_key_name="X-Key")
    connector.auth_secret = API_KEY
    connector.save()
    db = ConnectorFactory(organization=org, kind="database", base_url="")
    db.dsn = DSN
    db.save()

    for row in (_raw_row(connector), _raw_row(db)):
        stored = " ".join(row)
        assert API_KEY not in stored and "Hunter2" not in stored and "reporter" not in stored
    assert _raw_row(connector)[0].startswith("gAAAA")  # a Fernet token

    assert Connector.objects.unscoped().get(pk=connector.pk).auth_secret == API_KEY
    assert Connector.objects.unscoped().get(pk=db.pk).dsn == DSN


def test_a_deferred_secret_is_loaded_and_decrypted_on_access(org):
    connector = ConnectorFactory(organization=org)
    connector.auth_secret = API_KEY
    connector.save()
    assert Connector.objects.unscoped().only("name").get(pk=connector.pk).auth_secret == API_KEY


def test_a_ciphertext_copied_to_another_row_does_not_decrypt_there(org, other_org):
    source = ConnectorFactory(organization=org)
    source.auth_secret = API_KEY
    source.save()
    same_org_row = ConnectorFactory(organization=org)
    other_org_row = ConnectorFactory(organization=other_org, name=source.name)
    token = _raw_row(source)[0]

    for target in (same_org_row, other_org_row):
        _set_raw(target, "auth_secret", token)
        with pytest.raises(SecretDecryptError):
            Connector.objects.unscoped().get(pk=target.pk).auth_secret  # noqa: B018
    _set_raw(source, "dsn", token)  # the same row, another field
    reloaded = Connector.objects.unscoped().get(pk=source.pk)
    assert reloaded.auth_secret == API_KEY
    with pytest.raises(SecretDecryptError):
        reloaded.dsn  # noqa: B018


def test_plaintext_cannot_be_written_around_the_model(org):
    ConnectorFactory(organization=org)
    with pytest.raises(TypeError, match="encrypted"):
        Connector.objects.unscoped().update(auth_secret=API_KEY)


def test_encrypted_fields_registry_covers_connector_secrets():
    fields = {f.name for f in encrypted_fields()[Connector]}
    assert fields == {"auth_secret", "dsn"}


def test_rotation_reencrypts_every_row_with_the_new_first_key(org, other_org, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old_key]
    rows = []
    for owner in (org, other_org):
        connector = ConnectorFactory(organization=owner, auth_type="bearer")
        connector.auth_secret = f"token-of-{owner.slug}"
        connector.save()
        rows.append(connector)
    before = [_raw_row(c)[0] for c in rows]

    settings.FIELD_ENCRYPTION_KEYS = [new_key, old_key]
    assert [Connector.objects.unscoped().get(pk=c.pk).auth_secret for c in rows] == [
        "token-of-acme",
        "token-of-globex",
    ]
    out = io.StringIO()
    call_command("rotate_encryption_keys", stdout=out)
    assert "Re-encrypted 2 value(s)" in out.getvalue()

    settings.FIELD_ENCRYPTION_KEYS = [new_key]  # the old key is gone
    after = [_raw_row(c)[0] for c in rows]
    assert after != before
    assert [Connector.objects.unscoped().get(pk=c.pk).auth_secret for c in rows] == [
        "token-of-acme",
        "token-of-globex",
    ]


def test_rotation_reports_a_value_no_key_opens_and_keeps_the_rest(org, settings):
    good = ConnectorFactory(organization=org)
    good.auth_secret = API_KEY
    good.save()
    bad = ConnectorFactory(organization=org)
    _set_raw(bad, "auth_secret", _raw_row(good)[0])  # bound to another row
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 value"):
        call_command("rotate_encryption_keys", stdout=io.StringIO(), stderr=err)
    assert str(bad.pk) in err.getvalue() and API_KEY not in err.getvalue()
    assert Connector.objects.unscoped().get(pk=good.pk).auth_secret == API_KEY


@override_settings(FIELD_ENCRYPTION_KEYS=[Fernet.generate_key().decode()])
def test_clearing_a_secret_stores_an_empty_value(org):
    connector = ConnectorFactory(organization=org)
    connector.auth_secret = API_KEY
    connector.save()
    connector.auth_secret = ""
    connector.save()
    assert _raw_row(connector)[0] == ""
    assert Connector.objects.unscoped().get(pk=connector.pk).has_secret("auth_secret") is False


@pytest.mark.parametrize(
    ("method", "expected"),
    [("GET", False), ("HEAD", False), ("POST", True), ("PUT", True), ("PATCH", True), ("DELETE", True)],
)
def test_is_write_follows_the_http_method(org, method, expected):
    action = ConnectorActionFactory(connector__organization=org, method=method)
    assert ConnectorAction.objects.unscoped().get(pk=action.pk).is_write is expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT id, total FROM orders WHERE customer = %(customer)s", False),
        ("UPDATE orders SET status = 'paid' WHERE id = %(id)s", True),
        ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", True),
        ("SELECT 1; DROP TABLE orders", True),
    ],
)
def test_is_write_of_a_sql_action_follows_its_template(org, sql, expected):
    connector = ConnectorFactory(organization=org, kind="database", base_url="")
    action = ConnectorAction(connector=connector, name="q", sql_template=sql)
    action.save()
    assert ConnectorAction.objects.unscoped().get(pk=action.pk).is_write is expected


def test_free_form_sql_is_always_read_only_and_cannot_be_overridden_to_write(org):
    connector = ConnectorFactory(organization=org, kind="database", base_url="")
    connector.dsn = DSN
    connector.save()
    action = ConnectorAction(connector=connector, name="ask", free_form=True)
    action.full_clean()
    action.save()
    assert action.is_write is False
    action.is_write, action.is_write_override = True, True
    with pytest.raises(ValidationError) as excinfo:
        action.full_clean()
    assert "is_write" in excinfo.value.message_dict


def test_an_admin_override_of_is_write_is_kept(org):
    action = ConnectorActionFactory(connector__organization=org, method="GET")
    action.is_write, action.is_write_override = True, True
    action.save()
    action.method = "GET"
    action.save()
    assert ConnectorAction.objects.unscoped().get(pk=action.pk).is_write is True
    action.is_write_override = False
    action.save()
    assert ConnectorAction.objects.unscoped().get(pk=action.pk).is_write is False


def test_an_action_always_belongs_to_its_connectors_organisation(org, other_org):
    connector = ConnectorFactory(organization=org)
    action = ConnectorAction(
        connector=connector, organization=other_org, name="x", method="GET", path_template="/"
    )
    action.save()
    assert ConnectorAction.objects.unscoped().get(pk=action.pk).organization_id == org.pk


@pytest.mark.parametrize(
    ("fields", "error_field"),
    [
        ({"base_url": ""}, "base_url"),
        ({"auth_type": "bearer"}, "auth_secret"),
        ({"auth_type": "api_key_header"}, "auth_key_name"),
        ({"auth_type": "basic"}, "auth_username"),
        ({"auth_type": "oauth2_client_credentials"}, "oauth_token_url"),
        ({"kind": "database", "base_url": ""}, "dsn"),
        ({"allowed_private_hosts": ["http://10.0.0.1/x"]}, "allowed_private_hosts"),
        ({"name": "has space"}, "name"),
        ({"idempotency_header": "Idempotency Key"}, "idempotency_header"),
        ({"idempotency_header": "Authorization"}, "idempotency_header"),
        (
            {"auth_type": "api_key_header", "auth_key_name": "X-Key", "idempotency_header": "x-key"},
            "idempotency_header",
        ),
    ],
)
def test_connector_validation_names_the_missing_or_wrong_field(org, fields, error_field):
    connector = Connector(organization=org, name="erp", base_url="https://erp.example.com")
    for key, value in fields.items():
        setattr(connector, key, value)
    with pytest.raises(ValidationError) as excinfo:
        connector.full_clean()
    assert error_field in excinfo.value.message_dict


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://reporter:pw-9x@/erp?host=/var/run/postgresql",
        "host=db.internal hostaddr=10.0.0.1 password=pw-9x",
    ],
)
def test_an_unusable_dsn_is_refused_without_echoing_it(org, dsn):
    connector = Connector(organization=org, name="dw", kind="database")
    connector.dsn = dsn
    with pytest.raises(ValidationError) as excinfo:
        connector.full_clean()
    message = " ".join(excinfo.value.message_dict["dsn"])
    assert message.startswith("The DSN is not usable") and "pw-9x" not in message


def test_allowed_private_hosts_accept_names_and_addresses(org):
    connector = Connector(
        organization=org,
        name="erp",
        base_url="http://127.0.0.1:8000/demo-api",
        allowed_private_hosts=["127.0.0.1", "erp.corp.local", "::1", "[fd00::1]"],
    )
    connector.full_clean()
