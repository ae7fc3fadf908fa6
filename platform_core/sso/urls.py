"""``/accounts/``: allauth's social sign-in URLs (provider login and callback, errors, connections) and
the few account URLs allauth names, which lead to the platform's own pages.

Local accounts are made by admins: allauth's own login, sign-up and password pages are not served; its
``account_login``/``account_signup`` names lead to ``/login/``. https://docs.allauth.org/en/latest/installation/quickstart.html
"""

from __future__ import annotations

from allauth.account.views import AccountInactiveView
from allauth.urls import build_provider_urlpatterns
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("login/", RedirectView.as_view(pattern_name="login", query_string=True), name="account_login"),
    path("signup/", RedirectView.as_view(pattern_name="login", query_string=True), name="account_signup"),
    path("logout/", auth_views.LogoutView.as_view(), name="account_logout"),
    path("inactive/", AccountInactiveView.as_view(), name="account_inactive"),
    path("3rdparty/", include("allauth.socialaccount.urls")),
    *build_provider_urlpatterns(),
]
