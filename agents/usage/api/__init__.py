"""The budgets API (``/api/v1/orgs/<slug>/budgets/``)."""
