"""Knowledge bases: an organisation's documents as a governed, cited source for its agents (issue #34).

So far the document side that needs no database: :mod:`agents.knowledge.chunking` cuts a parsed document
into the chunks that are indexed and cited.
"""
