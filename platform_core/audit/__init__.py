"""The audit log: one row per administrative change, in that change's transaction.

:mod:`.log` appends a row, :mod:`.audited` is the one audited save and delete of every configurable model
(secrets recorded only as set or changed), :mod:`.actions` gives each stored action its readable name, and
:mod:`.export` streams the log as CSV or JSON Lines. Nothing here imports the core's services: they, and
every app, write through :func:`.log.audit_log_write`.
"""
