"""PostgreSQL and its family (KingbaseES, openGauss, HighGo) through psycopg: the DSN pinned to checked
addresses (:mod:`.dsn`), the connection pools (:mod:`.pool`), reading a result within the connector's
budget (:mod:`.read`) and which server of the family answered (:mod:`.family`)."""
