"""A MySQL/MariaDB connector as a model: its DSN is checked for its engine, and its SQL actions are
judged in MySQL's dialect when deciding whether they write."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from connectors.configs import connector_secret_values
from connectors.sql.config import database_config_for
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

DSN = "mysql://shop_reader:s3cret-pass@db.example.com:3306/shop?ssl_mode=verify_identity"


def database(**fields: object):
    values = {"kind": "database", "base_url": "", "engine": "mysql", "dsn": DSN}
    values.update(fields)
    return ConnectorFactory(**values)


def test_a_mysql_connector_with_a_mysql_dsn_is_valid_and_reaches_the_adapter_with_its_engine() -> None:
    connector = database()

    connector.full_clean()
    config = database_config_for(connector)

    assert config.engine == "mysql" and config.dsn == DSN
    assert "s3cret-pass" in connector_secret_values(connector)  # redacted on its own too


@pytest.mark.parametrize(
    ("engine", "dsn", "field", "message"),
    [
        ("postgresql", DSN, "engine", "This is a MySQL DSN"),
        ("mariadb", "postgresql://u:p@db.example.com/shop", "dsn", "starts with mysql://"),
        ("mysql", "mysql://u:p@db.example.com:3306/", "dsn", "must name one database"),
        ("mysql", "mysql://u:p@db.example.com/shop?local_infile=1", "dsn", "is not supported"),
    ],
)
def test_a_dsn_that_does_not_fit_the_engine_is_refused_on_its_field(
    engine: str, dsn: str, field: str, message: str
) -> None:
    connector = database(engine=engine, dsn=dsn)

    with pytest.raises(ValidationError) as raised:
        connector.full_clean()

    assert message in " ".join(raised.value.message_dict[field])
    assert "u:p@" not in str(raised.value)


def test_sql_actions_of_a_mysql_connector_are_judged_in_mysql_dialect() -> None:
    connector = database()

    backticked = ConnectorActionFactory(
        connector=connector,
        method="",
        path_template="",
        sql_template="SELECT `id` FROM `orders` WHERE id = %(id)s",
    )
    locking = ConnectorActionFactory(
        connector=connector, method="", path_template="", sql_template="SELECT id FROM orders FOR UPDATE"
    )
    sleeping = ConnectorActionFactory(
        connector=connector, method="", path_template="", sql_template="SELECT SLEEP(%(s)s)"
    )

    assert not backticked.is_write
    assert locking.is_write and sleeping.is_write
