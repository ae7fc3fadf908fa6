"""The platform itself: the tenancy core (organisations, memberships, roles, audit, tenancy, crypto), which
imports no other app of ours, and the project wiring on top of every app in :mod:`platform_core.wiring`.

Loading the Celery application here, as Celery's Django guide does, binds every app's ``@shared_task`` to
it and lets ``celery -A platform_core`` find it.
"""

# https://docs.celeryq.dev/en/v5.3.6/django/first-steps-with-django.html (the project package imports the app)
from platform_core.wiring.celery import app as celery_app

__all__ = ["celery_app"]
