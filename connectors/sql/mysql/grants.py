"""What a MySQL/MariaDB account may do beyond reading, from the lines of ``SHOW GRANTS``.

On MySQL and MariaDB the read-only transaction is weaker than PostgreSQL's: DDL commits it implicitly,
and ``LOCK TABLES``, ``SET SESSION``, ``LOAD_FILE``, ``SLEEP`` and ``HANDLER`` run inside it. A read
connector's account holding only reading privileges is therefore a required layer there, and Test
connection warns about any other privilege. An allow list, like the SQL guard's: a privilege that is not
known to only read (including MySQL 8's dynamic privileges and ``PROXY``) counts as one that may write,
and so does a role whose privileges could not be read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Privileges that read data or metadata and nothing else.
READ_PRIVILEGES = frozenset(
    {
        "USAGE",
        "SELECT",
        "SHOW VIEW",
        "SHOW DATABASES",
        "SHOW CREATE ROUTINE",
        "PROCESS",
        "REFERENCES",
        "REPLICATION CLIENT",
        "BINLOG MONITOR",
        "SLAVE MONITOR",
        "REPLICA MONITOR",
    }
)

_PRIVILEGE_GRANT = re.compile(r"^GRANT\s+(?P<privileges>.+?)\s+ON\s+", re.IGNORECASE | re.DOTALL)
_ROLE_GRANT = re.compile(r"^GRANT\s+(?P<roles>.+?)\s+TO\s+", re.IGNORECASE | re.DOTALL)
_COLUMNS = re.compile(r"\([^)]*\)")
_QUOTED_NAME = re.compile(r"`((?:[^`]|``)+)`(?:@`[^`]*`)?|'((?:[^']|'')+)'(?:@'[^']*')?")


@dataclass(frozen=True, slots=True)
class AccountPrivileges:
    """The privileges beyond reading found in an account's grants (upper case, sorted) and the roles it
    may take on, quoted as the server spelt them in its grants (ready for ``SET ROLE`` or ``USING``)."""

    writes: tuple[str, ...]
    roles: tuple[str, ...]


def grant_privileges(lines: Iterable[str]) -> AccountPrivileges:
    """Read ``SHOW GRANTS`` lines: every privilege not in :data:`READ_PRIVILEGES`, and the roles granted."""
    writes: set[str] = set()
    roles: list[str] = []
    for line in lines:
        text = line.strip()
        privileges = _PRIVILEGE_GRANT.match(text)
        if privileges:
            for privilege in _COLUMNS.sub("", privileges["privileges"]).split(","):
                name = " ".join(privilege.split()).upper()
                if name and name not in READ_PRIVILEGES:
                    writes.add(name)
            continue
        granted = _ROLE_GRANT.match(text)
        if granted:
            for match in _QUOTED_NAME.finditer(granted["roles"]):
                if match[0] not in roles:
                    roles.append(match[0])
    return AccountPrivileges(writes=tuple(sorted(writes)), roles=tuple(roles))
