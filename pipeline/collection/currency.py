"""The one currency conversion: offers priced as published become USD with the ECB's rates.

Parsers state the currency they read (`currency`) and quote every price in it; this step, run on
each provider's offers before `normalize` and storage, keeps the published figures
(`price_per_hour_native`, `setup_fee_native`, `price_per_month_native`) and converts to USD with
the rate of the rate source (`ecb`) dated on or before the observation, recorded on the offer
(`fx_rate`, `fx_date`). A price with no such rate fails the run: never a guessed conversion.

The ECB quotes units of a currency per one EUR, so USD per EUR is `rate(USD)`, and USD per unit of
another currency X is `rate(USD) / rate(X)` (a cross rate, dated by the older of the two).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import date, datetime

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.errors import PipelineError
from scrapers.models import OFFER_SCHEMA, ParseResult
from warehouse import Warehouse
from warehouse.rates import RATE_SCHEMA, rate_on_or_before

__all__ = ["MissingRateError", "RateLookup", "rates_table", "to_usd", "warehouse_rates"]

logger = logging.getLogger(__name__)

USD = "USD"
RATE_BASE = "EUR"
"""The ECB's base currency: every stored rate is units of a currency per one EUR."""
RATE_SOURCE = "ecb"
RateLookup = Callable[[str, date], "tuple[date, float] | None"]
"""USD per one unit of a currency on or before a day, with the rate's date; None when unknown."""


class MissingRateError(PipelineError):
    """A price in a currency with no stored rate on or before the observation."""


def warehouse_rates(warehouse: Warehouse) -> RateLookup:
    """USD per unit of a currency as of a day, from the rates stored in `warehouse`."""

    def rate_of(currency: str, day: date) -> tuple[date, float] | None:
        with warehouse.cursor() as cur:
            usd = rate_on_or_before(cur, RATE_BASE, USD, day)
            if usd is None or currency == RATE_BASE:
                return usd
            other = rate_on_or_before(cur, RATE_BASE, currency, day)
        if other is None:
            return None
        return min(usd[0], other[0]), usd[1] / other[1]

    return rate_of


def _rate_for(currency: str, day: date, rate_of: RateLookup) -> tuple[date, float]:
    found = rate_of(currency, day)
    if found is None:
        raise MissingRateError(
            f"no ECB {currency}->USD rate on or before {day.isoformat()}: "
            f"collect {RATE_SOURCE} first"
        )
    return found


def to_usd(result: ParseResult, rate_of: RateLookup) -> ParseResult:
    """`result`'s offers with USD prices, the native ones kept; raises `MissingRateError`."""
    table = result.table
    if table.num_rows == 0:
        return result
    currencies = table["currency"].combine_chunks()
    rates = pa.array([1.0] * table.num_rows, pa.float64())
    fx_rate = pa.nulls(table.num_rows, pa.float64())
    fx_date = pa.nulls(table.num_rows, pa.date32())
    for currency in pc.unique(currencies).to_pylist():
        if currency == USD:
            continue
        days = pc.unique(pc.cast(pc.filter(table["observed_at"], pc.equal(currencies, currency)),
                                 pa.date32())).to_pylist()  # fmt: skip
        for day in days:
            rate_date, rate = _rate_for(currency, day, rate_of)
            rows = pc.and_(
                pc.equal(currencies, currency),
                pc.equal(pc.cast(table["observed_at"], pa.date32()), pa.scalar(day, pa.date32())),
            )
            rates = pc.if_else(rows, rate, rates)
            fx_rate = pc.if_else(rows, rate, fx_rate)
            fx_date = pc.if_else(rows, pa.scalar(rate_date, pa.date32()), fx_date)
    columns = {
        "price_per_hour_native": table["price_per_hour"],
        "price_per_hour": pc.multiply(table["price_per_hour"], rates),
        "price_per_gpu_hour": pc.multiply(table["price_per_gpu_hour"], rates),
        "setup_fee_usd": pc.multiply(table["setup_fee_native"], rates),
        "price_per_month_usd": pc.multiply(table["price_per_month_native"], rates),
        "fx_rate": fx_rate,
        "fx_date": fx_date,
    }
    for name, values in columns.items():
        index = table.schema.get_field_index(name)
        table = table.set_column(index, OFFER_SCHEMA.field(name), values)
    _check_published(table)
    return ParseResult(table, list(result.rejects))


PUBLISHED_USD_TOLERANCE = 0.10
"""How far a provider's own USD figure may be from the ECB conversion before we say so: its
rate is its own (Hetzner's USD prices move with its own conversions, not the ECB's daily one)."""


def _check_published(table: pa.Table) -> None:
    """Warn, naming the offers, where the provider's own USD figure and the ECB conversion part;
    the price stays the conversion (issue 23: the feed's USD figure is a check only)."""
    published = table["published_usd_per_hour"]
    gap = pc.abs(pc.divide(pc.subtract(table["price_per_hour"], published), published))
    far = pc.fill_null(pc.greater(gap, PUBLISHED_USD_TOLERANCE), False)
    if pc.any(far).as_py():
        offers = pc.filter(table["offer_id"], far).to_pylist()
        logger.warning(
            "%d offers' own USD figure is more than %d%% from the ECB conversion: %s",
            len(offers), round(PUBLISHED_USD_TOLERANCE * 100), ", ".join(offers[:5]),
        )  # fmt: skip


def rates_table(
    source: str,
    base: str,
    rates: Sequence[tuple[date, str, float]],
    run_id: str,
    observed_at: datetime,
) -> pa.Table:
    """A rate source's (date, currency, rate) triples as the warehouse stores them."""
    n = len(rates)
    return pa.table(
        {
            "source": [source] * n,
            "base": [base] * n,
            "currency": [currency for _, currency, _ in rates],
            "rate_date": [day for day, _, _ in rates],
            "rate": [rate for _, _, rate in rates],
            "run_id": [run_id] * n,
            "observed_at": [observed_at] * n,
        },
        schema=RATE_SCHEMA,
    )
