"""Long-term memory per person: facts and preferences one user told an agent, recalled into the system
prompt of that user's later runs (issue 36).

A memory belongs to one user of one organisation and is read for nobody else. It is written by the
``remember`` tool a run's model calls (:mod:`agents.memory.tool`), by the person on the memory page, and
read back by relevance (:mod:`agents.memory.recall`) into the system prompt of the person's new runs of
agents that have memory on, within a token budget.
"""
