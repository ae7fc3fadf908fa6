"""The REST API of connectors: serializers, org-scoped views and their routes under /api/v1/."""
