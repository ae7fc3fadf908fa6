from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class HooksConfig(AppConfig):
    name = "hooks"
    verbose_name = _("Guard rails and approvals")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from hooks.models import AgentHookSettings, ApprovalPolicy, FeishuChannel, RateLimit
        from hooks.signals import approval_card_due
        from hooks.tasks import on_card_due
        from platform_core.config_version import config_watch

        # The services announce a card to send or update; the Celery tasks deliver it.
        approval_card_due.connect(on_card_due, dispatch_uid="hooks.queue_card_delivery")

        # Runs cache their agent's hook settings, and guard rails the organisation's policies and limits,
        # per process under the organisation's configuration version.
        config_watch(
            AgentHookSettings,
            ApprovalPolicy,
            RateLimit,
            FeishuChannel,
            m2m=(
                ApprovalPolicy.actions.through,
                ApprovalPolicy.connectors.through,
                ApprovalPolicy.approver_users.through,
            ),
        )
