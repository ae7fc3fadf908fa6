from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and conversations")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.demo import demo_agent_seed
        from agents.knowledge import checks  # noqa: F401 - registers the pgvector start-up check
        from agents.models import Agent, ModelConfig
        from agents.runs.wake import on_approval_closed
        from agents.skills.models import Skill
        from agents.usage.models import Budget
        from hooks.signals import approval_closed
        from platform_core.config_version import config_watch
        from platform_core.demo import DEMO_SEEDERS

        if demo_agent_seed not in DEMO_SEEDERS:
            DEMO_SEEDERS.append(demo_agent_seed)
        # A closed approval request wakes the run waiting on it, wherever it waits (agents.runs.wake).
        approval_closed.connect(on_approval_closed, dispatch_uid="agents.wake_run")
        # Runs cache their agent's setup (its skills' list too, and the organisation's budgets) per
        # process under the organisation's configuration version.
        config_watch(Agent, ModelConfig, Budget, Skill, m2m=(Agent.connectors.through, Agent.skills.through))
