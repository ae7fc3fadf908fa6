"""The admin index links the usage dashboard (imported by :mod:`agents.admin`)."""

from __future__ import annotations

from django.contrib import admin

admin.site.index_template = "admin/usage_dashboard_index.html"
