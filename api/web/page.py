"""Everything `GET /` shows, gathered from the pipeline functions the JSON API calls.

The offers come from the same in-memory answer as `/offers` (`OfferServer.answer`): the page
reads as rows only what it shows, a group's cheapest offer (`cheapest_per`) or the first
`OFFERS_SHOWN` offers in the order asked, never every offer.

The page leads with the job: a quote for the workload the form asks for (the default job,
`WorkloadForm()`, before it is sent), then the per-GPU view, history and every offer.

Each part (offers, chart, quotes) fails on its own: a bad filter or workload becomes a message
beside the control that caused it, and the rest of the page still renders.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from api.rest.schemas_quotes import QuotesOut, WorkloadQuery, quotes_out
from api.web.chart import Chart, NowPrice, SeriesKey, build_chart
from api.web.gpu_view import CHANGE_SPANS, GpuRow, gpu_rows, past_key, sort_gpu_rows
from api.web.index_view import IndexChart, build_index_chart
from api.web.offers_view import sort_rows, sort_values
from api.web.query import PageQuery, WorkloadForm
from pipeline.errors import PipelineError
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.history import HistoryQuery, cheapest_available_at, price_history
from pipeline.market.index import IndexQuery, index_series
from pipeline.market.offer_groups import GPU_KEY, cheapest_per, sorted_page
from pipeline.market.offers import OfferQuery, gpu_specs
from pipeline.market.quality import provider_health
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from pipeline.workload.architectures import known_models
from pipeline.workload.hub import ModelHub
from pipeline.workload.quotes import quote_offers
from scrapers.models import Pricing
from warehouse import Warehouse

__all__ = ["GpuGroup", "PageData", "page_data"]

QUOTES_SHOWN = 10
QUOTES_KEPT = 32
"""Quotes the page keeps per server (`_QuoteMemo`), the least recently shown dropped first."""
OFFERS_SHOWN = 500
"""Offers the table lists in the `all` view (the first in the order asked); the rest are a
link to `/offers` with the same filters."""
GROUP_KEYS = (GPU_KEY, "form_factor", "provider", "pricing")
"""The `cheapest` view's groups: one line per GPU and form factor, provider and pricing."""
PAST_LOOKBACK = timedelta(days=1)
"""A price "24 h ago" is each provider's last snapshot up to a day before that."""


@dataclass(frozen=True, slots=True)
class GpuGroup:
    """One GPU family in the GPU filter: its own option when it has one id, else a group."""

    family: str
    options: tuple[tuple[str, str], ...]
    """(value, label): the family itself first, then each id with offers."""


@dataclass(slots=True)
class PageData:
    query: PageQuery
    now: datetime
    providers: Sequence[ProviderFreshness]
    provider_names: list[str]
    gpu_groups: list[GpuGroup]
    models: list[str]
    gpus: list[GpuRow] = field(default_factory=list)
    """The first view: one row per GPU with an available offer."""
    offers: Sequence[Mapping[str, Any]] = field(default_factory=list)
    offers_total: int = 0
    chart_gpu: str | None = None
    chart: Chart | None = None
    index_chart: IndexChart | None = None
    quotes: QuotesOut | None = None
    errors: dict[str, str] = field(default_factory=dict)
    """Message per part of the page: `filters`, `chart` or `quotes`."""
    health: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each provider's newest run quality (pipeline.market.quality), for its badges."""

    @property
    def has_data(self) -> bool:
        """Whether any provider has a snapshot (else the page says what to do)."""
        return any(f.observed_at is not None for f in self.providers)

    @property
    def stale(self) -> list[ProviderFreshness]:
        return [f for f in self.providers if f.stale]


def _gpu_groups(present: set[str], selected: str | None) -> list[GpuGroup]:
    families: dict[str, list[str]] = {}
    for spec in gpu_specs():
        if spec.id in present:
            families.setdefault(spec.family, []).append(spec.id)
    groups = [
        GpuGroup(family, ((ids[0], ids[0]),))
        if len(ids) == 1
        else GpuGroup(family, ((family, f"All {family}"), *((i, i) for i in ids)))
        for family, ids in sorted(families.items())
    ]
    offered = {value for group in groups for value, _ in group.options}
    if selected and selected not in offered:
        groups.insert(0, GpuGroup(selected, ((selected, f"{selected} (no offers now)"),)))
    return groups


def _offer_query(query: PageQuery) -> OfferQuery:
    """The offers the page's filters ask for (a bad node filter raises `ValidationError`)."""
    return OfferQuery.model_validate(
        {
            "gpu": query.gpu,
            "providers": (query.provider,) if query.provider else (),
            "pricing": Pricing(query.pricing) if query.pricing else None,
            "include_unavailable": query.include_unavailable,
            **dict(query.node),
        }
    )


class _QuoteMemo:
    """The page's last quotes per server: every view leads with one, and ranking every offer
    takes a second of CPU at 100,000 offers, so a view that changes only the chart, a sort or
    the GPU order reuses the quote made for the same snapshots, workload and filters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: weakref.WeakKeyDictionary[OfferServer, OrderedDict[Hashable, QuotesOut]]
        self._kept = weakref.WeakKeyDictionary()

    def get(self, server: OfferServer, key: Hashable, make: Callable[[], QuotesOut]) -> QuotesOut:
        with self._lock:
            kept = self._kept.setdefault(server, OrderedDict())
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        made = make()  # outside the lock: two first views may both rank, never wait on each other
        with self._lock:
            kept[key] = made
            while len(kept) > QUOTES_KEPT:
                kept.popitem(last=False)
        return made


_quote_memo = _QuoteMemo()


def _quote(
    server: OfferServer, query: PageQuery, form: WorkloadForm, hub: ModelHub | None, now: datetime
) -> QuotesOut:
    """The workload's quotes over the in-memory offers `server` holds (no warehouse read), made
    once per snapshots in force, workload and filters (`_QuoteMemo`; `hub` is the app's)."""
    day = now.date()  # the quotes' 30-day history ends today
    key = (server.version(), form, query.gpu, query.provider, query.pricing, day)
    return _quote_memo.get(server, key, lambda: _make_quote(server, query, form, hub, now))


def _make_quote(
    server: OfferServer, query: PageQuery, form: WorkloadForm, hub: ModelHub | None, now: datetime
) -> QuotesOut:
    workload = WorkloadQuery.model_validate(
        {
            "model": form.model,
            "method": form.method,
            "tokens": form.tokens,
            "seq_len": form.seq_len,
            "gpu": query.gpu,
            "provider": [query.provider] if query.provider else None,
            "pricing": query.pricing,
            "include_spot": form.include_spot,
            "top": QUOTES_SHOWN,
        }
    )
    request = workload.request(hub=hub)
    return quotes_out(quote_offers(server.warehouse, request, offers=server.offers, now=now))


def _now_prices(rows: Sequence[Mapping[str, Any]]) -> dict[SeriesKey, NowPrice]:
    """The cheapest available offer per chart line in the current snapshot: where lines end."""
    now: dict[SeriesKey, NowPrice] = {}
    for row in rows:
        if not row["available"] or not row["gpu"]:
            continue
        key = (row["gpu"], row.get("form_factor"), row["provider"], row["pricing"])
        price = float(row["price_per_gpu_hour"])
        if key not in now or price < now[key].price_per_gpu_hour:
            now[key] = NowPrice(price, row["observed_at"])
    return now


def _gpus(
    warehouse: Warehouse, query: PageQuery, rows: Sequence[Mapping[str, Any]], now: datetime
) -> list[GpuRow]:
    providers = (query.provider,) if query.provider else ()
    past = {
        span: {
            past_key(r): float(r["price_per_gpu_hour"])
            for r in cheapest_available_at(warehouse, now - ago, PAST_LOOKBACK, providers)
        }
        for span, ago in CHANGE_SPANS.items()
    }
    return sort_gpu_rows(gpu_rows(rows, past), query.gpu_sort)


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _index_chart(warehouse: Warehouse, gpu: str, interval: str, now: datetime) -> IndexChart | None:
    """The GPU's price index, hourly over a week for the hourly chart, else daily over 90 days."""
    index_interval = "1h" if interval == "1h" else "1d"
    try:
        query = IndexQuery(gpu=gpu, interval=index_interval)
        return build_index_chart(index_series(warehouse, query, now))
    except PipelineError:  # a GPU spelling the index cannot narrow to one id: no chart
        return None


def page_data(
    server: OfferServer,
    settings: Settings,
    query: PageQuery,
    now: datetime,
    freshness: Sequence[ProviderFreshness],
    hub: ModelHub | None = None,
) -> PageData:
    """`hub`: where a Hugging Face id typed in the quote form gets its config.json."""
    warehouse = server.warehouse
    page = PageData(
        query=query,
        now=now,
        providers=freshness,
        provider_names=[f.provider for f in freshness],
        gpu_groups=_gpu_groups(server.gpus_offered(), query.gpu),
        models=[a.name for a in known_models()],
        health=provider_health(warehouse),
    )
    try:
        answer = server.answer(_offer_query(query), now, freshness)
    except PipelineError as exc:
        page.errors["filters"] = str(exc)
        return page
    except ValidationError as exc:
        page.errors["filters"] = _validation_message(exc)
        return page
    assert answer is not None  # only a ready-only question goes unanswered
    page.offers_total = answer.count
    available = cheapest_per(answer, GROUP_KEYS, available_only=True)
    page.gpus = _gpus(warehouse, query, available, now)
    descending = query.order == "desc"
    if query.view == "cheapest":
        groups = cheapest_per(answer, GROUP_KEYS)
        page.offers = sort_rows(groups, query.sort, descending=descending)
    else:
        values = sort_values(answer, query.sort)
        page.offers = sorted_page(answer, values, descending, OFFERS_SHOWN).offers
        groups = cheapest_per(answer, (GPU_KEY,))
    counts: Counter[str] = Counter()
    for row in groups:
        if row["gpu"]:
            counts[row["gpu"]] += row["offers"]
    page.chart_gpu = query.gpu or (min(counts, key=lambda g: (-counts[g], g)) if counts else None)
    if page.chart_gpu is not None:
        history = price_history(
            warehouse,
            HistoryQuery(
                gpu=page.chart_gpu,
                interval=query.interval,
                providers=(query.provider,) if query.provider else (),
                pricing=query.pricing,
            ),
            now,
        )
        intervals = {name: settings.interval(name) for name in page.provider_names}
        page.chart = build_chart(history, now, _now_prices(available), intervals)
        page.index_chart = _index_chart(warehouse, page.chart_gpu, query.interval, now)
    try:  # the page leads with a quote: the default job's until the form asks for another
        page.quotes = _quote(server, query, query.workload or WorkloadForm(), hub, now)
    except ValidationError as exc:
        page.errors["quotes"] = _validation_message(exc)
    except PipelineError as exc:
        page.errors["quotes"] = str(exc)
    return page
