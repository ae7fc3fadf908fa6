"""Knowledge bases: an organisation's documents as a governed, cited source for its agents (issue #34).

So far the parts that need no database: :mod:`agents.knowledge.formats` says what an upload really is
and refuses what is unsafe to open (a lying extension, a ZIP bomb), :mod:`agents.knowledge.parsing`
reads it into Markdown pages with a library per format, :mod:`agents.knowledge.chunking`
cuts a parsed document into the chunks that are indexed and cited, :mod:`agents.knowledge.terms` makes
the terms of keyword search (Chinese and English alike) and fuses rankings.
"""
