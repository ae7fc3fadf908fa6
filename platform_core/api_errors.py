"""The API's exception handler: data conflicts are a clear 4xx, never a 500 traceback.

DRF's own handler answers its exceptions; this one adds, in one place for every endpoint:

- ``ProtectedError``/``RestrictedError`` (a delete that other rows forbid): 409, naming what refers to it;
- Django's ``ValidationError`` from a model's ``full_clean`` in a service: 400 with the field errors;
- a unique-constraint ``IntegrityError`` that slipped past validation (two requests racing): 409.

Every other exception is left to DRF (and a 500), so programming errors stay loud.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import Model, ProtectedError, RestrictedError
from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler, set_rollback

from platform_core.stored_files import storage_unavailable_message

logger = logging.getLogger(__name__)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: DRF's handler plus the conflicts above."""
    response = exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, (ProtectedError, RestrictedError)):
        set_rollback()
        return Response(
            {"detail": protected_message(exc, _view_model(context)), "code": "protected"},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, DjangoValidationError):
        set_rollback()
        return Response(validation_detail(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError) and is_unique_violation(exc):
        set_rollback()
        logger.warning("unique constraint raced past validation: %s", exc)
        return Response(
            {
                "detail": _(
                    "Another row already has these values (perhaps saved a moment ago). Reload and try again."
                ),
                "code": "conflict",
            },
            status=status.HTTP_409_CONFLICT,
        )
    return None


def protected_message(exc: ProtectedError | RestrictedError, model: type[Model] | None) -> str:
    """ "This agent cannot be deleted: 2 conversations still refer to it. …", counted per kind of row."""
    blocking: set[Model] = (
        exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects
    )
    counts = Counter(type(row) for row in blocking)
    rows = ", ".join(
        f"{count} {kind._meta.verbose_name if count == 1 else kind._meta.verbose_name_plural}"
        for kind, count in sorted(counts.items(), key=lambda item: item[0]._meta.label)
    )
    name = model._meta.verbose_name if model is not None else _("object")
    return _(
        "This %(model)s cannot be deleted: %(rows)s still refer to it. Deactivate it instead, "
        "or delete those first."
    ) % {"model": name, "rows": rows}


def _view_model(context: dict[str, Any]) -> type[Model] | None:
    queryset = getattr(context.get("view"), "queryset", None)
    return getattr(queryset, "model", None)


def validation_detail(exc: DjangoValidationError) -> dict[str, Any]:
    """A model ``ValidationError`` in DRF's shape (``__all__`` becomes ``non_field_errors``)."""
    non_field = api_settings.NON_FIELD_ERRORS_KEY
    if hasattr(exc, "error_dict"):
        return {
            (non_field if key == NON_FIELD_ERRORS else key): value for key, value in exc.message_dict.items()
        }
    return {non_field: exc.messages}


def is_unique_violation(exc: IntegrityError) -> bool:
    """Whether the database refused a duplicate key (PostgreSQL, SQLite, MySQL/MariaDB)."""
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None) or getattr(getattr(cause, "diag", None), "sqlstate", None)
    if sqlstate == "23505":  # PostgreSQL unique_violation
        return True
    args = getattr(cause, "args", ()) or ()
    if args and args[0] == 1062:  # MySQL/MariaDB ER_DUP_ENTRY
        return True
    return "UNIQUE constraint failed" in str(exc)  # SQLite


class StorageUnavailable(APIException):
    """503: the file storage did not give a file (a download may be tried again)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "storage_unavailable"

    def __init__(self) -> None:
        super().__init__(storage_unavailable_message())
