"""Issue 46 item 10: readiness includes the lake's data path. A bucket deleted (or a data
directory removed) makes `/offers` fail, so `/readyz` answers 503 naming the data path, and is
ready again once the data is back; the answer never shows a credential."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.routes import health
from pipeline.market.serving import STATUS_TTL_S
from tests.lake.test_faults import collect, replica_settings
from warehouse import Warehouse


@pytest.fixture(autouse=True)
def _probe_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `/readyz` probes the data path again (no cached answer between the steps)."""
    monkeypatch.setattr(health, "DATA_PATH_CHECK_TTL_S", 0.0)


def _not_ready(replica: TestClient, data_path: str) -> str:
    answer = replica.get("/readyz")
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["ready"] is False and body["data_path"] is False
    assert body["database"] is True  # the catalog still answers: the data path is what failed
    assert data_path in body["detail"]
    return answer.text


def test_readyz_is_not_ready_while_the_bucket_is_gone_and_ready_once_it_is_back(s3_lake, store):
    with Warehouse.open(s3_lake.url, data_path=s3_lake.data_path) as collector:
        [stored] = collect(collector, "lambda")
    assert stored.status == "ok"
    client = store.client()
    with TestClient(create_app(replica_settings(s3_lake))) as replica:
        ready = replica.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["data_path"] is True

        saved = {
            key: client.get_object(Bucket=s3_lake.bucket, Key=key)["Body"].read()
            for key in store.keys(s3_lake.bucket)
        }
        for key in saved:
            client.delete_object(Bucket=s3_lake.bucket, Key=key)
        client.delete_bucket(Bucket=s3_lake.bucket)

        time.sleep(STATUS_TTL_S)
        assert replica.get("/offers", params={"provider": "lambda"}).status_code == 503
        shown = _not_ready(replica, str(s3_lake.data_path))

        client.create_bucket(
            Bucket=s3_lake.bucket,
            CreateBucketConfiguration={"LocationConstraint": client.meta.region_name},
        )
        for key, data in saved.items():
            client.put_object(Bucket=s3_lake.bucket, Key=key, Body=data)
        back = replica.get("/readyz")
        assert back.status_code == 200, back.text
        assert replica.get("/offers", params={"provider": "lambda"}).status_code == 200
    for secret in (store.secret, store.key_id):
        assert secret not in shown


def test_readyz_is_not_ready_while_the_data_directory_is_gone(lake):
    data = Path(lake.data_path)
    with Warehouse.open(lake.url, data_path=lake.data_path) as collector:
        [stored] = collect(collector, "lambda")
    assert stored.status == "ok"
    with TestClient(create_app(replica_settings(lake))) as replica:
        assert replica.get("/readyz").status_code == 200
        moved = data.with_name("lake-data-moved")
        data.rename(moved)
        _not_ready(replica, str(data))
        data.write_text("not a directory")  # a file where the directory was
        _not_ready(replica, str(data))
        data.unlink()
        moved.rename(data)
        assert replica.get("/readyz").status_code == 200
