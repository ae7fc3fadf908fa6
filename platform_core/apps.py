from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlatformCoreConfig(AppConfig):
    name = "platform_core"
    verbose_name = _("Organisations and audit")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from platform_core import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from platform_core.config_version import config_version_start
        from platform_core.models import Organization

        post_save.connect(config_version_start, sender=Organization, dispatch_uid="config_version.start")
