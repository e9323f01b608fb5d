"""End to end: a guarded agent's metrics, scraped over HTTP from the Prometheus exporter."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.prometheus")

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

from .conftest import build
from .helpers import ask, reminders, repeat, scripted


@pytest.fixture
def prometheus() -> Iterator[tuple[MeterProvider, str]]:
    """A meter provider exported to Prometheus, and the URL its metrics are served at."""
    # The exporter's collector goes to prometheus_client's default registry, which the
    # server serves; shutting the provider down takes it out again.
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()], shutdown_on_exit=False)
    # Port 0: the system picks a free one; the server is listening once this returns.
    server, thread = start_http_server(0, addr="127.0.0.1")
    try:
        yield provider, f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        provider.shutdown()


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample served at `url`, by sample name: its labels and value."""
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def only(samples: list[tuple[dict[str, str], float]], **labels: str) -> list[Any]:
    return [
        (found, value)
        for found, value in samples
        if all(found.get(key) == want for key, want in labels.items())
    ]


def test_the_counters_reach_prometheus(prometheus: tuple[MeterProvider, str]) -> None:
    provider, url = prometheus
    agent = build(
        "middleware", scripted(repeat("probe", {"q": "same"}, 9)), meter_provider=provider
    )
    messages = agent.invoke(ask())
    assert reminders(messages) == [
        ("gentle", "probe", 3),
        ("detailed", "probe", 5),
        ("detailed", "probe", 8),
    ]

    samples = scrape(url)

    instance = {"repeat_tool_reminder_instance": "RepeatToolReminderMiddleware"}
    sent = only(samples["repeat_tool_reminder_reminders_total"], **instance)
    by_level = {
        (labels["repeat_tool_reminder_tool"], labels["repeat_tool_reminder_level"]): value
        for labels, value in sent
    }
    assert by_level == {("probe", "gentle"): 1.0, ("probe", "detailed"): 2.0}
    for labels, _ in sent:
        assert labels["repeat_tool_reminder_detector"] == "repeat"
        assert labels["repeat_tool_reminder_delivered"] == "true"
    (calls,) = only(samples["repeat_tool_reminder_calls_total"], **instance)
    assert calls[1] == 9.0
    (count,) = only(samples["repeat_tool_reminder_streak_count"], **instance)
    (total,) = only(samples["repeat_tool_reminder_streak_sum"], **instance)
    assert (count[1], total[1]) == (3.0, 16.0)
    buckets = {
        labels["le"]: value
        for labels, value in only(samples["repeat_tool_reminder_streak_bucket"], **instance)
    }
    assert (buckets["2.0"], buckets["3.0"], buckets["5.0"], buckets["8.0"]) == (0, 1, 2, 3)
    assert buckets["+Inf"] == 3.0
    assert "repeat_tool_reminder_escalations_total" not in samples
