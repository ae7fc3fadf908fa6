"""Model fields the apps declare the same way: a foreign key that may stay empty, and one to a user."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_stubs_ext import StrOrPromise  # django-stubs' own helper, a dev dependency


def optional_foreign_key(
    to: Any,
    verbose_name: StrOrPromise,
    *,
    on_delete: Any = models.SET_NULL,
    related_name: str = "+",
    **options: Any,
) -> models.ForeignKey[Any, Any]:
    """A foreign key that may stay empty (null, blank in forms); by default it is emptied when the row it
    names is deleted and gives that row no reverse accessor."""
    return models.ForeignKey(
        to,
        verbose_name=verbose_name,
        on_delete=on_delete,
        null=True,
        blank=True,
        related_name=related_name,
        **options,
    )


def optional_user_key(
    verbose_name: StrOrPromise, **options: Any
) -> models.ForeignKey[User | None, User | None]:
    """An :func:`optional_foreign_key` to the user who did something (``created by``, ``revoked by``)."""
    return optional_foreign_key(settings.AUTH_USER_MODEL, verbose_name, **options)
