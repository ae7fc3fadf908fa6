"""The REST API of the tenancy core (organisations, members, audit log, tokens): serializers, views and routes."""
