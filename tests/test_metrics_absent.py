"""Without opentelemetry-api: the guards record no metrics, and cost nothing for it.

No optional peer needed: opentelemetry is hidden here when it is installed, and is absent
under `make test-lowest`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain import _metrics as guard_metrics

from .conftest import build
from .helpers import ask, repeat, scripted


@pytest.fixture
def without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Imports of opentelemetry fail, as they do where it is not installed."""
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # type: ignore[arg-type]
    guard_metrics._api.cache_clear()
    yield
    guard_metrics._api.cache_clear()


@pytest.mark.usefixtures("without_opentelemetry")
def test_without_opentelemetry_no_face_records_metrics(face: str) -> None:
    agent = build(face, scripted(repeat("probe", {"q": "same"}, 3)))
    agent.invoke(ask())

    assert agent.stats.metrics is None
    assert agent.stats.snapshot()["reminders"] == {"probe": {"gentle": 1}}


@pytest.mark.usefixtures("without_opentelemetry")
def test_without_opentelemetry_a_meter_provider_says_what_to_install() -> None:
    with pytest.raises(TypeError, match=r"needs opentelemetry-api: pip install .*\[otel\]"):
        RepeatToolReminderMiddleware(meter_provider=object())  # type: ignore[arg-type]
    assert RepeatToolReminderCallbackHandler(meter_provider=None).stats.metrics is None


def test_meter_provider_false_never_looks_for_opentelemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def looked() -> None:
        raise AssertionError("opentelemetry was looked for")

    monkeypatch.setattr(guard_metrics, "_api", looked)
    assert RepeatToolReminderNode(meter_provider=False).stats.metrics is None
