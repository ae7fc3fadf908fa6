"""The project wiring: what assembles the apps into one platform.

It owns the root URLs (:mod:`.urls`, with the ``/api/v1/`` routes of every app), the ASGI application
(:mod:`.asgi`) and its websocket routes (:mod:`.routing`), the Celery application (:mod:`.celery`), the top
bar's links (:mod:`.navigation`), the ``serve`` and ``serve_prod`` commands and the multi-process
supervisor behind them (:mod:`.deploy`). It sits on top of every app and may import any of them; nothing
below it (the apps, the engine, the tenancy core in the rest of ``platform_core``) imports it. The
import-linter contracts in ``pyproject.toml`` check both.
"""
