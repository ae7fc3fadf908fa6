"""Engine tests: the scripted LLM fixtures come from the root conftest (tests.fakes.llm_fixtures)."""
