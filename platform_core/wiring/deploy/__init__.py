"""Running the platform as several processes on one machine: PostgreSQL and Redis helpers and a small
process supervisor. ``manage.py serve_prod`` (``make prod``), the multi-process tests in
``tests/production/`` and the benchmarks in ``benchmarks/`` all start their processes through it."""
