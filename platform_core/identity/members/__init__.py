"""An organisation's members: adding people by e-mail or by a single sign-on identity (:mod:`.members`),
invitations of existing accounts, which join only when the person accepts (:mod:`.invitations`), the
invitation e-mails (:mod:`.mail`) and the typed outcomes of adding someone (:mod:`.outcomes`). Role
changes and removals are the core's :func:`platform_core.services.membership_save` and
:func:`~platform_core.services.membership_remove`.
"""
