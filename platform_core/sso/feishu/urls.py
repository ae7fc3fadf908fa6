"""The Feishu provider's sign-in URLs (``/accounts/feishu/login/`` and its callback)."""

from allauth.socialaccount.providers.oauth2.urls import default_urlpatterns

from platform_core.sso.feishu.provider import PlatformFeishuProvider

urlpatterns = default_urlpatterns(PlatformFeishuProvider)
