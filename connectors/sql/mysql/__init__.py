"""MySQL and MariaDB through asyncmy: the adapter (:mod:`.adapter`), the DSN pinned to checked addresses
(:mod:`.dsn`), the connection pools (:mod:`.pool`), reading a result within the connector's budget
(:mod:`.read`) and the account's privileges (:mod:`.grants`)."""
