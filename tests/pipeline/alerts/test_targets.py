"""Which webhook targets are refused, at creation and again at send time (resolver injected)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.alerts import (
    AlertKind,
    AlertSpec,
    Condition,
    UnresolvableTargetError,
    UnsafeTargetError,
    WebhookSender,
    alert_deliveries,
    check_target,
    create_alert,
)
from pipeline.alerts.events import new_delivery
from pipeline.settings import Settings
from warehouse import alerts as wa


def resolving(*addresses: str):
    def resolver(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolver


PUBLIC = resolving("93.184.215.14")


def test_an_https_target_on_a_public_address_is_allowed_and_pinned_to_that_address():
    target = check_target("https://hooks.example.com/x?y=1", allow_private=False, resolver=PUBLIC)
    assert target.address == "93.184.215.14"
    assert str(target.pinned_url) == "https://93.184.215.14/x?y=1"
    assert target.host_header == "hooks.example.com"


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",
        "ftp://hooks.example.com/x",
        "https://user:pass@hooks.example.com/x",
        "https:///no-host",
        "not a url",
    ],
)
def test_only_plain_https_urls_are_accepted_by_default(url):
    with pytest.raises(UnsafeTargetError):
        check_target(url, allow_private=False, resolver=PUBLIC)


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "192.168.1.10",
        "172.16.0.5",
        "127.0.0.1",
        "::1",
        "fd12::1",
        "100.64.0.1",
        "::ffff:10.0.0.1",
    ],
)
def test_a_name_resolving_to_a_private_or_loopback_address_is_refused(address):
    with pytest.raises(UnsafeTargetError, match="GPUPRICES_ALLOW_PRIVATE_WEBHOOKS"):
        check_target("https://hooks.example.com/", allow_private=False, resolver=resolving(address))


def test_one_private_address_among_public_ones_is_enough_to_refuse():
    resolver = resolving("93.184.215.14", "10.1.2.3")
    with pytest.raises(UnsafeTargetError, match="10.1.2.3"):
        check_target("https://hooks.example.com/", allow_private=False, resolver=resolver)


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data/",
        "http://169.254.169.254/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://169.254.10.1/",
        "http://[fe80::1]/",
        "http://0.0.0.0:9000/",
        "http://224.0.0.1/",
    ],
)
def test_metadata_link_local_and_non_unicast_targets_are_refused_even_when_private_is_allowed(url):
    with pytest.raises(UnsafeTargetError):
        check_target(url, allow_private=True, resolver=PUBLIC)


def test_a_name_resolving_to_the_metadata_address_is_refused_even_when_private_is_allowed():
    with pytest.raises(UnsafeTargetError, match="metadata"):
        check_target(
            "http://metadata.internal/", allow_private=True, resolver=resolving("169.254.169.254")
        )


def test_allowing_private_webhooks_permits_http_to_loopback_and_private_addresses():
    assert check_target("http://127.0.0.1:9000/hook", allow_private=True).address == "127.0.0.1"
    assert check_target("http://10.0.0.1/", allow_private=True).address == "10.0.0.1"


def test_a_name_that_does_not_resolve_is_its_own_error():
    with pytest.raises(UnresolvableTargetError):
        check_target("https://nowhere.example/", allow_private=False, resolver=resolving())


def test_a_target_is_checked_again_at_send_time_and_refused_if_it_now_resolves_privately(
    warehouse, db_path
):
    settings = Settings(db=db_path)
    spec = AlertSpec(
        url="https://hooks.example.com/gpu",
        condition=Condition.of(AlertKind.PRICE, gpu="H100-80GB", below_price_per_gpu_hour=2.0),
    )
    now = datetime.now(UTC)
    created = create_alert(warehouse, spec, settings, now, resolver=PUBLIC)
    delivery = new_delivery(created.rule.rule_id, "alert.test", "{}", now)
    with warehouse.transaction() as conn:
        wa.insert_delivery(conn, delivery)
    rebound = WebhookSender(warehouse, settings, resolver=resolving("127.0.0.1"))
    [result] = rebound.deliver([delivery.delivery_id])
    assert result.outcome == "failed" and result.status_code is None
    assert "refused at send time" in result.error and "loopback" in result.error
    [log] = alert_deliveries(warehouse, created.rule.rule_id)
    assert log.delivery.status == "failed"


@pytest.mark.parametrize(
    ("url", "carried"),
    [
        ("https://[2002:7f00:1::]/", "127.0.0.1"),  # 6to4
        ("https://[2002:a9fe:a9fe::]/", "169.254.169.254"),
        ("https://[2002:a00:1::]/", "10.0.0.1"),
        ("https://[64:ff9b::7f00:1]/", "127.0.0.1"),  # NAT64
        ("https://[64:ff9b::a9fe:a9fe]/", "169.254.169.254"),
        ("https://[64:ff9b::c0a8:10a]/", "192.168.1.10"),
        ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "127.0.0.1"),  # Teredo client
        ("https://[2001:0:a00:1:8000:63bf:a247:28f1]/", "10.0.0.1"),  # Teredo server
    ],
)
def test_ipv6_forms_carrying_a_private_or_metadata_ipv4_are_refused_even_when_private_is_allowed(
    url, carried
):
    for allow_private in (False, True):
        with pytest.raises(UnsafeTargetError, match=f"carrying {carried}"):
            check_target(url, allow_private=allow_private, resolver=PUBLIC)


def test_a_name_resolving_to_a_6to4_form_of_loopback_is_refused():
    with pytest.raises(UnsafeTargetError, match="6to4 address carrying 127.0.0.1"):
        check_target(
            "https://hooks.example.com/", allow_private=True, resolver=resolving("2002:7f00:1::")
        )


def test_local_use_nat64_is_refused_and_ipv4_mapped_is_judged_as_its_ipv4():
    with pytest.raises(UnsafeTargetError, match="local-use NAT64"):
        check_target("https://[64:ff9b:1::a00:1]/", allow_private=True, resolver=PUBLIC)
    with pytest.raises(UnsafeTargetError, match="metadata"):
        check_target("http://[::ffff:169.254.169.254]/", allow_private=True, resolver=PUBLIC)


def test_translated_forms_of_a_public_ipv4_are_allowed():
    for url in ("https://[2002:5db8:d70e::]/", "https://[64:ff9b::5db8:d70e]/"):
        assert check_target(url, allow_private=False, resolver=PUBLIC).address == url[9:-2]


@pytest.mark.parametrize("port", [0, 65536, 99999])
def test_a_port_outside_1_to_65535_is_refused(port):
    with pytest.raises(UnsafeTargetError, match="port must be 1-65535"):
        check_target(f"https://hooks.example.com:{port}/", allow_private=True, resolver=PUBLIC)


@pytest.mark.parametrize(
    "url",
    [
        "https://[fec0::1]/",
        "https://[fec0:0:0:ffff::1]/",
        "https://[3fff::1]/",
        "https://192.88.99.1/",
    ],
)
def test_site_local_and_other_reserved_ranges_are_refused_even_when_private_is_allowed(url):
    for allow_private in (False, True):
        with pytest.raises(UnsafeTargetError, match="refused"):
            check_target(url, allow_private=allow_private, resolver=PUBLIC)


def test_a_name_resolving_to_a_site_local_address_is_refused():
    with pytest.raises(UnsafeTargetError, match="site-local"):
        check_target(
            "https://hooks.example.com/", allow_private=False, resolver=resolving("fec0::1")
        )


@pytest.mark.parametrize(
    "url",
    [
        "https://xn--/",
        "https://xn--zz-/",
        "https://a..b/",
        "https://" + "a" * 64 + ".example.com/",
        "https://" + "a." * 130 + "com/",
    ],
)
def test_a_host_name_dns_cannot_take_is_refused_before_any_lookup(url):
    def no_lookup(host, port):
        raise AssertionError("looked up")

    with pytest.raises(UnsafeTargetError, match="host name"):
        check_target(url, allow_private=False, resolver=no_lookup)
