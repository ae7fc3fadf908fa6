"""The REST API's pagination: DRF's ``?limit=&offset=`` with the page size capped.

Without a cap, ``?limit=<a number past 2**63>`` reached the database as a LIMIT it cannot hold (SQLite's
"datatype mismatch", a 500). A limit above :data:`MAX_PAGE_SIZE` gets that many rows; an offset past the
end gets an empty page without a query (DRF's own check against the count).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework.pagination import LimitOffsetPagination

# The largest page a client may ask for (the chat page reads its history 200 messages at a time).
MAX_PAGE_SIZE = 500


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``LimitOffsetPagination`` whose ``limit`` is at most :data:`MAX_PAGE_SIZE`."""

    max_limit = MAX_PAGE_SIZE
    limit_query_description = _(
        "Number of results to return per page (at most 500; a larger limit gets 500)."
    )
