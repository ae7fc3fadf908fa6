"""Engine test configuration: the scripted LLM fixtures.

Imported rather than listed in ``pytest_plugins`` (which pytest only allows in the root
conftest); once the root conftest registers ``tests.fakes.llm_fixtures`` this stays harmless.
"""

from tests.fakes.llm_fixtures import (  # noqa: F401
    make_llm,
    pytest_configure,
    scripted_llm,
    scripted_llm_server,
)
