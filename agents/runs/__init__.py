"""The life of a run: its status transitions (:mod:`.lifecycle`, the one place ``Run.status`` changes),
its lease (:mod:`.leases`), its event stream (:mod:`.events`), its checkpoints and tool ledger
(:mod:`.checkpoints`), the read side of parked runs (:mod:`.parking`), the process's run manager
(:mod:`.manager`) and what a run's task comes to (:mod:`.outcomes`), running it in a worker
(:mod:`.worker`), and the Celery tasks (:mod:`.tasks`, the only module here that knows Celery).

Imports go one way: ``tasks`` -> ``worker`` -> ``manager`` -> ``lifecycle``, ``checkpoints`` ->
``events`` -> ``leases`` -> ``sql``.
"""
