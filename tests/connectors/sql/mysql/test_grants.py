"""Reading ``SHOW GRANTS`` lines (MariaDB's and MySQL 8's spellings): what an account holds beyond
reading, and which roles it may take on (issue #31)."""

from __future__ import annotations

import pytest

from connectors.sql.mysql.grants import grant_privileges


@pytest.mark.parametrize(
    ("lines", "writes"),
    [
        (
            [
                "GRANT USAGE ON *.* TO `r`@`%` IDENTIFIED BY PASSWORD '*AB'",
                "GRANT SELECT ON `db`.* TO `r`@`%`",
            ],
            (),
        ),
        (["GRANT SELECT, SHOW VIEW ON `db`.* TO `r`@`%` WITH GRANT OPTION"], ()),
        (["GRANT SELECT (`id`, `name`) ON `db`.`t` TO `r`@`%`"], ()),
        (["GRANT SELECT, INSERT (`name`) ON `db`.`t` TO `w`@`%`"], ("INSERT",)),
        (["GRANT SELECT, LOCK TABLES ON `db`.* TO `w`@`%`"], ("LOCK TABLES",)),
        (["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"], ("ALL PRIVILEGES",)),
        (["GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION"], ("PROXY",)),
        (["GRANT SELECT,INSERT,UPDATE ON `db`.* TO `w`@`%`"], ("INSERT", "UPDATE")),  # MySQL 8: no spaces
        (
            ["GRANT BACKUP_ADMIN,SYSTEM_VARIABLES_ADMIN ON *.* TO `w`@`%`"],
            ("BACKUP_ADMIN", "SYSTEM_VARIABLES_ADMIN"),
        ),
        (["GRANT SELECT, CREATE TEMPORARY TABLES ON `db`.* TO `w`@`%`"], ("CREATE TEMPORARY TABLES",)),
    ],
)
def test_every_privilege_that_is_not_a_read_is_reported(lines, writes):
    assert grant_privileges(lines).writes == writes


def test_granted_roles_are_listed_as_the_server_quotes_them():
    lines = [
        "GRANT `reporting`, `etl` TO `u`@`%`",  # MariaDB
        "GRANT `app_read`@`%` TO `u`@`%`",  # MySQL 8
        "GRANT SELECT ON `db`.* TO `u`@`%`",
        "SET DEFAULT ROLE `reporting` FOR `u`@`%`",
    ]
    found = grant_privileges(lines)
    assert found.roles == ("`reporting`", "`etl`", "`app_read`@`%`")
    assert found.writes == ()
