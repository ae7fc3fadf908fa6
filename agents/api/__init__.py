"""The REST API of agents: serializers, org-scoped views and their routes under /api/v1/."""
