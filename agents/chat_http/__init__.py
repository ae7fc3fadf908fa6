"""Chat over HTTP, as plain functions: posting a message (a run or a follow-up), following a run's event
stream (replay from the store, then live), Server-Sent Events encoding, cancelling, and the
OpenAI-compatible chat completions mapped onto runs. The API views in ``agents.api.http_chat`` and
``agents.api.openai_compat`` stay thin and call these."""
