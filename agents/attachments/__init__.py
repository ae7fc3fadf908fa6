"""Files attached in the chat (issue #35): their storage, limits, visibility and retention.

:mod:`.sniffing` decides from a file's bytes what it is (reusing the knowledge bases' format check for
documents), :mod:`.services` stores, binds to a message and deletes attachments (audited; nothing is ever
half-stored), :mod:`.selectors` says who sees which, :mod:`.retention` and :mod:`.tasks` delete what the
retention rules say is due, :mod:`.download` serves a file to those who may see it.
"""
