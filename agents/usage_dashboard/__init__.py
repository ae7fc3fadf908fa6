"""The usage dashboard (issue 21): an organisation's usage and cost over time, by user, agent and model
endpoint, its costliest runs and its budgets' consumption, for the admin page, its CSV files and
``/api/v1/orgs/<slug>/usage/``."""
