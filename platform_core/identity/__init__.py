"""Who is acting: API keys (:mod:`.api_keys`), an organisation's members and their invitations
(:mod:`.members`), and linked Feishu and single sign-on identities (:mod:`.linked_identities`).

It sits above the core's services and the audit log, which it uses, and below the tenancy edge
(:mod:`platform_core.tenancy`, whose views limit an API key to its scopes) and the pages, the admin and
the REST API. Single sign-on keeps its own package, :mod:`platform_core.sso`: the password backend's
dotted path is stored in every signed-in session.
"""
