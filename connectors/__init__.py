"""Connectors: an organisation's HTTP/OpenAPI APIs and databases (PostgreSQL and its family, MySQL,
MariaDB), their encrypted credentials, their actions as agent tools (with the schema tools of a database),
the SQL guard, the SSRF guard of every outbound connection, the call log and the demo ERP API.

Imports the tenancy core and the engine only; the guard rails (:mod:`hooks`) build on it.
"""
