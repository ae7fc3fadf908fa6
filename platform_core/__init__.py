"""The Django project and the tenancy core."""

from platform_core.celery import app as celery_app

__all__ = ["celery_app"]
