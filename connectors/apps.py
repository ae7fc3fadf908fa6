from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = _("Connectors")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from connectors.demo.seed import demo_connector_seed
        from connectors.http.kind import HttpKind
        from connectors.kinds import adapter_register
        from connectors.knowledge.kind import KnowledgeKind
        from connectors.mcp.kind import McpKind
        from connectors.memory.kind import MemoryKind
        from connectors.models import Connector, ConnectorAction
        from connectors.skills.kind import SkillsKind
        from connectors.sql.kind import SqlKind
        from platform_core.config_version import config_watch
        from platform_core.demo import DEMO_SEEDERS

        # Each kind of connector validates and describes itself (connectors.kinds); its package builds on
        # the models, so the models find it through this registry.
        adapter_register(HttpKind())
        adapter_register(McpKind())
        adapter_register(SqlKind())
        adapter_register(KnowledgeKind())
        adapter_register(SkillsKind())
        adapter_register(MemoryKind())
        if demo_connector_seed not in DEMO_SEEDERS:
            DEMO_SEEDERS.append(demo_connector_seed)
        # Runs cache their connectors and actions per process under the organisation's configuration version.
        config_watch(Connector, ConnectorAction)
