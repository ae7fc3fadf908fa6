from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and conversations")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.demo import demo_agent_seed
        from agents.models import Agent, ModelConfig
        from agents.runs.lifecycle import run_parked
        from agents.runs.tasks import on_approval_closed, on_run_parked
        from agents.usage.models import Budget
        from hooks.signals import approval_closed
        from platform_core.config_version import config_watch
        from platform_core.demo import DEMO_SEEDERS

        if demo_agent_seed not in DEMO_SEEDERS:
            DEMO_SEEDERS.append(demo_agent_seed)
        # A decision on an approval a parked run waits for resumes that run (durable runs).
        approval_closed.connect(on_approval_closed, dispatch_uid="agents.resume_parked_run")
        run_parked.connect(on_run_parked, dispatch_uid="agents.resume_if_decided")
        # Runs cache their agent's setup (and the organisation's budgets) per process under the
        # organisation's configuration version.
        config_watch(Agent, ModelConfig, Budget, m2m=(Agent.connectors.through,))
