"""The secret values of connectors, to redact them from what a run, a call log or an answer shows.

Each kind turns its connector rows into its adapter's plain configs itself (``connectors/<kind>/config.py``,
through :meth:`~connectors.kinds.ConnectorKindAdapter.call_config`). These functions decrypt secrets, so
they touch the ORM's loaded values only and run synchronously; async callers wrap them with
``sync_to_async`` together with the query that loads the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from connectors.models import Connector, ConnectorAction
from connectors.sql.dsn import dsn_password
from platform_core.crypto import SecretDecryptError

logger = logging.getLogger(__name__)


def run_secret_values(actions: Iterable[ConnectorAction]) -> tuple[str, ...]:
    """The secret values of the connectors behind a run's actions (each connector once), to redact them
    from the run's events and checkpoints; a connector whose secrets cannot be decrypted adds none."""
    values: list[str] = []
    seen: set[Any] = set()
    for action in actions:
        connector = action.connector
        if connector.pk in seen:
            continue
        seen.add(connector.pk)
        try:
            values.extend(connector_secret_values(connector))
        except SecretDecryptError:
            logger.warning("connector %s: its secrets cannot be decrypted for redaction", connector.pk)
    return tuple(values)


def connector_secrets_for_redaction(organization_id: int, connector_id: Any) -> tuple[str, ...]:
    """The secret values of the organisation's connector ``connector_id``, to redact them from what is
    stored or shown; none when there is no such connector or its secrets cannot be read (an undecryptable
    secret must not stop a record or a request; key-based redaction still runs)."""
    connector = Connector.objects.filter(pk=connector_id, organization_id=organization_id).first()
    if connector is None:
        return ()
    try:
        return tuple(connector_secret_values(connector))
    except Exception:
        logger.warning("could not read the secrets of connector %s for redaction", connector_id)
        return ()


def connector_secret_values(connector: Connector) -> tuple[str, ...]:
    """Every secret string of the connector (decrypted), for redaction; a DSN's password on its own too."""
    values = [connector.auth_secret]
    dsn = connector.dsn
    if dsn:
        values.extend((dsn, dsn_password(dsn)))
    return tuple(v for v in values if v)
