"""The skill-library kind of connector: the guard rails' view of an organisation's skills."""
