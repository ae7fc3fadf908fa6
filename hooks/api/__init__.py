"""The REST API of hooks: serializers, org-scoped views and their routes under /api/v1/."""
