from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and conversations")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.demo import demo_agent_seed
        from platform_core.demo import DEMO_SEEDERS

        if demo_agent_seed not in DEMO_SEEDERS:
            DEMO_SEEDERS.append(demo_agent_seed)
