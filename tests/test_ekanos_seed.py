"""The Ekanos seed's (003) three tools, unmodified in notebooks/gems/acme-payments, through
every branch they have; and its "genuine fault" handler."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ACME = Path(__file__).parent.parent / "notebooks" / "gems" / "acme-payments"
API = "https://api.acme.example/v1"
LOCATION = {"label": "San Francisco", "latitude": 37.7749, "longitude": -122.4194}
pytestmark = pytest.mark.deno


def test_weather_reads_the_saved_location_and_fetches_the_forecast(opened: Callable) -> None:
    seen: list[str] = []
    handler = {
        "match": f"{API}/weather",
        "respond": lambda req: seen.append(req.url) or {"json": {"temperature": 3}},
    }
    bench = opened(ACME, account_storage={"settings/location": LOCATION}, fetch_handlers=[handler])
    assert bench.call("get_current_weather", {}).value == {"temperature": 3}
    assert seen == [f"{API}/weather?lat=37.7749&lon=-122.4194"]


def test_weather_without_a_location_and_on_a_500(opened: Callable) -> None:
    bench = opened(ACME, fetch_handlers=[{"match": f"{API}/weather", "respond": {"status": 503}}])
    none = bench.call("get_current_weather", {})
    assert (
        none.value == {"error": "No location saved for this account."} and none.outcome == "expected_failure"
    )
    other = opened(ACME, account_storage={"settings/location": LOCATION},
                   fetch_handlers=[{"match": f"{API}/weather", "respond": {"status": 503}}])  # fmt: skip
    res = other.call("get_current_weather", {})
    assert res.value == {"error": "Acme returned 503."}
    assert res.log_rows[0]["level"] == "error" and res.log_rows[0]["fields"] == {"status": 503}


def test_list_recent_payments_passes_its_limit(opened: Callable) -> None:
    payments = {"payments": [{"id": "pay_1", "amount": 5.0, "status": "completed"}]}
    handler = {"match": f"{API}/payments?limit=3", "respond": {"json": payments}}
    bench = opened(ACME, secrets={"api_key": "sk_test_abcdef"}, fetch_handlers=[handler])
    res = bench.call("list_recent_payments", {"limit": 3})
    assert res.value == payments and res.warnings == []  # the outputExample's shape


def test_refund_posts_the_payment_as_json(opened: Callable) -> None:
    got: dict[str, Any] = {}

    def refund(req: Any) -> dict[str, Any]:
        got.update(method=req.method, type=req.headers.get("content-type"), body=json.loads(req.body))
        return {"json": {"refundId": "ref_9", "status": "processed"}}

    bench = opened(
        ACME,
        secrets={"api_key": "sk_test_abcdef"},
        fetch_handlers=[{"match": f"{API}/refunds", "respond": refund}],
    )
    res = bench.call("acme_payments_refund_payment", {"paymentId": "pay_1", "reason": "dup"})
    assert res.value == {"refundId": "ref_9", "status": "processed"}
    assert got == {
        "method": "POST",
        "type": "application/json",
        "body": {"paymentId": "pay_1", "reason": "dup"},
    }
    bad = bench.call("refund_payment", {"reason": "no id"})
    assert bad.error is not None and bad.error.code == "E_SCHEMA"  # required: ['paymentId']


def test_the_genuine_fault_handler_throws(opened: Callable) -> None:
    bench = opened(ACME, fetch_handlers=[{"match": "https://api.example/data", "respond": {"status": 500}}])
    res = bench.call("get_data")
    assert res.outcome == "fault" and "API returned 500" in res.error.message
