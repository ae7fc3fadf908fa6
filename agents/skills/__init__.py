"""An organisation's skills: procedures the agents allowed them read on demand (issue 36).

A skill (name, description, a Markdown body and optional text files) is listed by name and description
in the system prompt of every run of an agent allowed it, and read whole, when the model decides it needs
it, with the tool ``skills__read_skill``: the one action of the organisation's skill-library connector,
so the guard rails judge it and the call log records which version was read. Skills are versioned,
audited, and imported and exported as a ``SKILL.md`` folder (the open Agent Skills layout).
"""
