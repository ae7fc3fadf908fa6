"""What a model call costs: the endpoint's prices per million tokens applied to the call's usage."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from agents.engine.completion import Usage

MILLION = Decimal(1_000_000)
#: Costs are kept to this many decimal places (``UsageRecord.cost``).
COST_PLACES = Decimal("0.00000001")


@dataclass(frozen=True, slots=True)
class Prices:
    """An endpoint's prices per million tokens in ``currency``; ``cached_input`` ``None``: the input price."""

    input: Decimal
    output: Decimal
    currency: str
    cached_input: Decimal | None = None

    @classmethod
    def of(
        cls,
        *,
        input: Decimal | None,
        output: Decimal | None,
        cached_input: Decimal | None,
        currency: str,
    ) -> Prices | None:
        """The prices an endpoint's fields describe; ``None`` (cost unknown) without an input and an output
        price or a currency."""
        if input is None or output is None or not currency:
            return None
        return cls(Decimal(input), Decimal(output), currency.upper(), cached_input)

    def cost(self, usage: Usage) -> Decimal:
        """The cost of ``usage``: uncached prompt tokens at the input price, cached ones at the cached
        price, every completion token (reasoning included: it is billed as output) at the output price."""
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        total = (
            Decimal(usage.prompt_tokens - cached) * self.input
            + Decimal(cached) * cached_price
            + Decimal(usage.completion_tokens) * self.output
        ) / MILLION
        return total.quantize(COST_PLACES, rounding=ROUND_CEILING)

    def most_per_token(self) -> Decimal:
        """The highest price of one token (for reserving a call's cost before it is made)."""
        return max(self.input, self.output, self.cached_input or Decimal(0)) / MILLION
