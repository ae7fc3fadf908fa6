"""allauth's Feishu OAuth views, with every Feishu URL on the configured origin."""

from __future__ import annotations

from typing import Any

from allauth.account import app_settings
from allauth.socialaccount.providers.feishu.views import FeishuOAuth2Adapter
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.utils import build_absolute_uri
from django.http import HttpRequest
from django.urls import reverse

from platform_core.sso.feishu.client import PlatformFeishuOAuth2Client

DEFAULT_BASE_URL = "https://open.feishu.cn"


class PlatformFeishuOAuth2Adapter(FeishuOAuth2Adapter):
    """Feishu's authen v1 web sign-in (authorize page, user access token, user info) at ``BASE_URL``."""

    @property
    def base_url(self) -> str:
        return str(self.get_provider().get_settings().get("BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    @property
    def authorize_url(self) -> str:
        return self.base_url + "/open-apis/authen/v1/index"

    @property
    def access_token_url(self) -> str:
        return self.base_url + "/open-apis/authen/v1/access_token"

    @property
    def user_info_url(self) -> str:
        return self.base_url + "/open-apis/authen/v1/user_info"

    def get_client(self, request: HttpRequest, app: Any) -> PlatformFeishuOAuth2Client:
        callback_url = reverse(f"{self.provider_id}_callback")
        protocol = self.redirect_uri_protocol or app_settings.DEFAULT_HTTP_PROTOCOL
        callback_url = build_absolute_uri(request, callback_url, protocol=protocol)
        return PlatformFeishuOAuth2Client(
            request,
            app.client_id,
            app.secret,
            self.access_token_method,
            self.access_token_url,
            callback_url,
            base_url=self.base_url,
        )


oauth2_login = OAuth2LoginView.adapter_view(PlatformFeishuOAuth2Adapter)
oauth2_callback = OAuth2CallbackView.adapter_view(PlatformFeishuOAuth2Adapter)
