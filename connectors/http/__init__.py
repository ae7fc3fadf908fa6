"""HTTP APIs as connectors: each action is one SSRF-checked request, optionally imported from OpenAPI.

- :mod:`.adapter`: one action call as one request (redirects, retries, the circuit breaker, the
  idempotency key), and "Test connection".
- :mod:`.request`: an action's arguments as the request's path, query, headers and body.
- :mod:`.auth`: the connector's credentials on a request (API key, bearer, basic, OAuth2 client
  credentials with its token cache).
- :mod:`.transport`: the httpx transport that checks every new connection with the SSRF guard (the MCP
  connectors and the Feishu client send through it too).
- :mod:`.body`: a response body read within the size limit, as the text the model reads.
- :mod:`.openapi`: an OpenAPI 3 document as the connector's actions.
"""
