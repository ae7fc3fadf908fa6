"""Groups of an organisation's members (issue 34): named sets of members that access is granted to (a
knowledge base restricted to groups). Writes, each audited, in :mod:`.services`; org-scoped reads in
:mod:`.selectors`. A member who leaves the organisation leaves its groups
(:func:`platform_core.services.membership_remove`).
"""
