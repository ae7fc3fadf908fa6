"""Errors of the Feishu wire layer and the meaning of the codes the approval gate meets."""

from __future__ import annotations

# Body codes (FEISHU.md sections 1 and 2).
INVALID_TOKEN = 99991663
MISSING_TOKEN = 99991661
RATE_LIMITED = 99991400
INVALID_CONTENT = 230001
BOT_NOT_IN_CHAT = 230002
CARD_SCHEMA_ERROR = 230099

TOKEN_CODES = frozenset({INVALID_TOKEN, MISSING_TOKEN})

CODE_MEANINGS: dict[int, str] = {
    INVALID_TOKEN: "the tenant access token is invalid",
    MISSING_TOKEN: "the tenant access token is missing",
    RATE_LIMITED: "rate limited by Feishu",
    INVALID_CONTENT: "the message content is invalid",
    BOT_NOT_IN_CHAT: "the bot is not a member of the chat; add the app's bot to the chat",
    CARD_SCHEMA_ERROR: "the card JSON does not match Feishu's card schema",
}


def code_meaning(code: int | None) -> str:
    """A short English explanation of a Feishu body code."""
    if code is None:
        return "no Feishu error code"
    return CODE_MEANINGS.get(code, "an unrecognised Feishu error code")


class FeishuError(Exception):
    """A Feishu call failed.

    ``retryable`` tells the caller (a Celery task) whether the same request may succeed later:
    rate limits, 5xx and network errors are retryable, ``retry_after`` (seconds) is Feishu's hint
    when it gave one. Messages never contain the app secret or a token.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        http_status: int | None = None,
        retry_after: float | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        self.retry_after = retry_after
        self.retryable = retryable

    def __repr__(self) -> str:
        return (
            f"FeishuError({str(self)!r}, code={self.code!r}, http_status={self.http_status!r}, "
            f"retryable={self.retryable!r}, retry_after={self.retry_after!r})"
        )
