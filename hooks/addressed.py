"""Guard-rail rows addressed by id, across organisations: the deliberate exception to tenant models
failing closed (``platform_core.models.OrgOwnedQuerySet``).

The approval machinery (the hook that opened a request and waits on it, the Celery task that sends its
card, the run that parks on it) and the call log's writer are handed a row's id by the platform itself,
never by a user, and the id alone names the row. A Feishu callback names its channel in its URL and is
then verified with that channel's own secrets. Every read a user asks for is scoped to their
organisation elsewhere (:mod:`hooks.selectors`, the scoped API views).
"""

from __future__ import annotations

from django.db.models import QuerySet

from connectors.models import ConnectorCallLog
from hooks.models import ApprovalRequest, FeishuChannel


def approvals() -> QuerySet[ApprovalRequest]:
    """Every approval request, to be narrowed by its id."""
    return ApprovalRequest.objects.unscoped()


def call_logs() -> QuerySet[ConnectorCallLog]:
    """Every call log row, to be narrowed by the id its writer was given."""
    return ConnectorCallLog.objects.unscoped()


def feishu_channels() -> QuerySet[FeishuChannel]:
    """Every Feishu channel, to be narrowed by the id a callback URL names."""
    return FeishuChannel.objects.unscoped()
