"""SQL databases as connectors: PostgreSQL and its family, MySQL and MariaDB.

- :mod:`.adapter`: one action call as one statement (PostgreSQL's path here, MySQL's and MariaDB's
  through :mod:`.mysql.adapter`), the schema tools, and "Test connection".
- :mod:`.guard`: whether a SQL text is one plain read statement (both dialects), with the functions
  it may call (:mod:`.functions`) and the tables it may read (:mod:`.allow_list`).
- :mod:`.schema`: the ``list_tables`` and ``describe_table`` tools.
- :mod:`.tables`: a query's result as the compact text table the model reads.
- :mod:`.dsn`, :mod:`.dsn_errors`: a DSN of either engine; :mod:`.pool_registry`: the pools' bookkeeping.
- :mod:`.postgres`: PostgreSQL's DSN, pool, reading within budget, and its family of servers.
- :mod:`.mysql`: MySQL's and MariaDB's adapter, DSN, pool, reading within budget and account grants.
"""
