"""The life of a run: its status transitions (:mod:`.lifecycle`), its lease (:mod:`.leases`), its event
stream (:mod:`.events`), its checkpoints (:mod:`.checkpoints`), the process's run manager
(:mod:`.manager`), running it in a worker (:mod:`.worker`) and the Celery tasks (:mod:`.tasks`).

Imports go one way: ``tasks`` -> ``worker`` -> ``manager`` -> ``lifecycle``/``checkpoints`` ->
``events`` -> ``leases`` -> ``sql``.
"""
