"""API keys: creating, revoking and reading them (:mod:`.keys`), what a key may do (:mod:`.scopes`, with
the DRF permission in :mod:`.permissions`), Bearer authentication on REST and MCP (:mod:`.authentication`)
and on the websocket handshake (:mod:`.ws_auth`), failed keys throttled per address (:mod:`.throttle`),
long-lived responses that end with their key (:mod:`.watch`), and the web app's form (:mod:`.forms`).
"""
