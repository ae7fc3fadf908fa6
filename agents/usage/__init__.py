"""Token accounting and budgets: one :class:`~agents.usage.models.UsageRecord` per model call, and the
:class:`~agents.usage.models.Budget` guard rails checked before every call."""
