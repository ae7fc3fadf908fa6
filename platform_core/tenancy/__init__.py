"""Tenancy at the edges: the organisation is resolved once, from the request, and everything is scoped to
it. :mod:`.scoping` resolves it from the URL for API views (the scoped view mixin, the role permissions)
and web pages (:func:`.scoping.member_org_from_slug`); :mod:`.admin_orgs` gives the organisations an admin
request may reach, which the admin's base class (:mod:`platform_core.admin.base`) scopes every admin page
to; :mod:`.time_zone` shows a page's times in its organisation's zone.
"""
