"""The tenancy core's web pages, above tenancy and identity as the REST API (:mod:`platform_core.api`) and
the admin are: the home page and the API keys page (:mod:`.views`), an organisation's Members page
(:mod:`.members`, routed by :mod:`.members_urls` under ``o/<slug>/members/``) and the signed-in person's
invitations (:mod:`.invitations`, routed by :mod:`.invitations_urls` under ``invitations/``). Writes go
through the services of :mod:`platform_core.identity` and :mod:`platform_core.services`.
"""
