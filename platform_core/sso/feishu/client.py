"""allauth's Feishu OAuth client, with the app access token fetched from the configured origin."""

from __future__ import annotations

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.feishu.client import FeishuOAuth2Client
from allauth.socialaccount.providers.oauth2.client import OAuth2Error

APP_ACCESS_TOKEN_PATH = "/open-apis/auth/v3/app_access_token/internal"


class PlatformFeishuOAuth2Client(FeishuOAuth2Client):
    """Fetches the app access token at ``base_url`` as a JSON body (Feishu's documented form:
    https://open.feishu.cn/document/server-docs/authentication-management/access-token/app_access_token_internal)."""

    def __init__(self, *args: object, base_url: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.app_access_token_url = base_url + APP_ACCESS_TOKEN_PATH

    def app_access_token(self) -> str:
        body = {"app_id": self.consumer_key, "app_secret": self.consumer_secret}
        with get_adapter().get_requests_session() as sess:
            resp = sess.request("POST", self.app_access_token_url, json=body)
        try:
            data = resp.json()
        except ValueError:
            data = None
        if not isinstance(data, dict) or data.get("code") != 0 or not data.get("app_access_token"):
            code = data.get("code") if isinstance(data, dict) else None
            raise OAuth2Error(f"Feishu refused the app credentials (HTTP {resp.status_code}, code {code})")
        return str(data["app_access_token"])
