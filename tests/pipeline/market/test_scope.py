"""The filter scope is a typed model with one field per declared filter (`FILTERS`), and each
front end's model is the same fields, fewer of them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.errors import PipelineError
from pipeline.market.history import HISTORY_SCOPE, HistoryQuery
from pipeline.market.scope import NODE_SCOPE, OfferScope, front_end_model
from warehouse.filters import FILTERS


def test_the_scope_has_one_typed_field_per_declared_filter():
    declared = [f.field for f in FILTERS]
    fields = list(OfferScope.model_fields)
    missing = [name for name in declared if name not in fields]
    assert not missing, (
        f"FILTERS rows without an OfferScope field: {missing}; add a typed field to OfferScope "
        f"(pipeline/market/scope.py), e.g. `{missing[0]}: <type> = "
        f'Field(**_field_kwargs("{missing[0]}"))`'
    )
    extra = [name for name in fields if name not in declared]
    assert not extra, f"OfferScope fields without a FILTERS row (warehouse/filters.py): {extra}"
    assert fields == declared, "OfferScope lists its fields in the order FILTERS documents them"


@pytest.mark.parametrize("row", FILTERS, ids=lambda f: f.field)
def test_a_field_takes_its_alias_description_and_bounds_from_its_row(row):
    field = OfferScope.model_fields[row.field]
    assert field.alias == row.alias and field.description == row.description
    bounds = {type(m).__name__: m for m in field.metadata}
    if row.ge is not None:
        assert bounds["Ge"].ge == row.ge and bounds["Le"].le == row.le
    if row.type in (int, float):
        assert field.annotation == row.type | None and field.default is None
    if row.type is bool:
        assert field.annotation is bool and field.default is False


def test_lists_split_names_and_the_gpu_shorthand_sets_the_count():
    scope = OfferScope.model_validate(
        {"provider": ["vastai,runpod", "lambda"], "country": "DE, FR", "gpu": "H100:8"}
    )
    assert scope.providers == ("vastai", "runpod", "lambda") and scope.countries == ("DE", "FR")
    assert scope.gpu == "H100" and scope.gpu_count == 8
    assert OfferScope(vendor=" NVIDIA", jurisdiction="EEA").given() == {"vendor", "jurisdiction"}


def test_a_value_past_its_bound_is_refused_naming_the_field():
    with pytest.raises(ValidationError, match="min_vram_gb"):
        OfferScope(min_vram_gb=5000)


def test_a_front_end_model_keeps_the_honoured_fields_with_the_same_checks():
    params = front_end_model(HistoryQuery, HISTORY_SCOPE, "HistoryParams")
    assert not NODE_SCOPE & set(params.model_fields)
    assert {"gpu", "providers", "form_factor", "interval", "since"} <= set(params.model_fields)
    given = params.model_validate({"gpu": "H100", "provider": "vastai,runpod"})
    assert given.model_dump()["providers"] == ("vastai", "runpod")
    with pytest.raises(ValidationError, match="min_vram_gb"):
        params.model_validate({"gpu": "H100", "min_vram_gb": 80})
    with pytest.raises(ValidationError, match="gpu="):
        params.model_validate({"gpu": "H100:0"})


def test_a_front_end_refuses_a_filter_it_does_not_apply():
    query = HistoryQuery(gpu="H100", min_vram_gb=80)
    with pytest.raises(PipelineError, match="history does not filter on min_vram_gb"):
        query.check_honoured(HISTORY_SCOPE, "history")
