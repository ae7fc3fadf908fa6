"""The knowledge-base kind of connector: the guard rails' view of an organisation's knowledge base."""
