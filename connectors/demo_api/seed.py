"""Demo seeder: the demo organisation's "erp" connector, pointing at this platform's own demo API."""

from __future__ import annotations

from platform_core.models import Organization


def demo_connector_seed(org: Organization) -> None:
    """Create or refresh the demo "erp" connector and import the demo API's OpenAPI document."""
