"""OpenTelemetry metrics: every face records its counts, read back through the SDK's reader."""

from __future__ import annotations

import gc
import logging
import re
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.metrics")

from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderWarning,
)
from repeat_reminder_langchain import _metrics as guard_metrics
from repeat_reminder_langchain._counter import Count
from repeat_reminder_langchain._metrics import (
    CALLS,
    ESCALATIONS,
    REMINDERS,
    STREAK,
    STREAK_BUCKETS,
    metrics_for,
)
from repeat_reminder_langchain._reminder import Reminder
from repeat_reminder_langchain._stats import Stats

from .conftest import Guarded, build
from .helpers import LoopModel, ask, assert_adjacent, call, probe, repeat, scripted, turn

SAME = {"q": "same"}
Make = Callable[..., Guarded]
INSTANCES = {
    "handler": "RepeatToolReminderCallbackHandler",
    "state": "RepeatToolReminderNode",
    "middleware": "RepeatToolReminderMiddleware",
}


class Reader:
    """A meter provider of the SDK and what its in-memory reader collects, as plain data."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        # Not shut down at exit: a provider the test drops can be collected.
        self.provider = MeterProvider(metric_readers=[self.reader], shutdown_on_exit=False)

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                assert scope.scope.name == "repeat_reminder_langchain"
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found

    def values(self, name: str, *keys: str) -> dict[tuple[Any, ...], int]:
        """A counter's values by the given attributes (without their namespace)."""
        totals: dict[tuple[Any, ...], int] = {}
        for point in self.points(name):
            key = tuple(point.attributes[f"repeat_tool_reminder.{k}"] for k in keys)
            totals[key] = totals.get(key, 0) + point.value
        return totals


@pytest.fixture
def otel() -> Iterator[Reader]:
    reader = Reader()
    yield reader
    reader.provider.shutdown()


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> guard_metrics._Registry:
    """A registry of its own: the global provider's instruments as if none were made yet."""
    registry = guard_metrics._Registry()
    monkeypatch.setattr(guard_metrics, "_REGISTRY", registry)
    return registry


def test_every_face_records_calls_reminders_and_streaks(guarded: Make, otel: Reader) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 9)), meter_provider=otel.provider)
    agent.invoke(ask())
    instance = INSTANCES[agent.face]

    assert otel.values(CALLS, "instance") == {(instance,): 9}
    assert otel.values(REMINDERS, "instance", "tool", "level", "detector", "delivered") == {
        (instance, "probe", "gentle", "repeat", True): 1,
        (instance, "probe", "detailed", "repeat", True): 2,
    }
    (streak,) = otel.points(STREAK)
    assert isinstance(streak, HistogramDataPoint)
    assert dict(streak.attributes) == {
        "repeat_tool_reminder.instance": instance,
        "repeat_tool_reminder.tool": "probe",
        "repeat_tool_reminder.detector": "repeat",
    }
    assert (streak.count, streak.sum, streak.min, streak.max) == (3, 3 + 5 + 8, 3, 8)
    assert tuple(streak.explicit_bounds) == STREAK_BUCKETS
    assert otel.points(ESCALATIONS) == []


def test_the_metrics_agree_with_the_stats(guarded: Make, otel: Reader, thread: str) -> None:
    # Two runs on one thread, the model answering after a reminder in the first: every turn
    # the stats count, the metrics count, once.
    agent = guarded(LoopModel(), checkpointer=InMemorySaver(), meter_provider=otel.provider)
    agent.invoke(ask("loop 4"), thread)
    agent.invoke(ask("loop 6"), thread)

    stats = agent.stats.snapshot()
    by_level = otel.values(REMINDERS, "tool", "level")
    assert stats["calls"] == 10
    assert otel.values(CALLS, "instance") == {(INSTANCES[agent.face],): stats["calls"]}
    assert {
        (t, lvl): n for t, levels in stats["reminders"].items() for lvl, n in levels.items()
    } == {
        ("probe", "gentle"): 2,
        ("probe", "detailed"): 1,
    }
    assert by_level == {("probe", "gentle"): 2, ("probe", "detailed"): 1}


def test_observe_mode_records_reminders_as_not_delivered(guarded: Make, otel: Reader) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 5)), mode="observe", meter_provider=otel.provider
    )
    agent.invoke(ask())

    assert otel.values(REMINDERS, "level", "delivered") == {
        ("gentle", False): 1,
        ("detailed", False): 1,
    }


def test_an_escalation_is_recorded_with_its_behavior(guarded: Make, otel: Reader) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 9)),
        thresholds=[3],
        escalate_after=5,
        meter_provider=otel.provider,
    )
    messages = agent.invoke(ask())

    assert messages[-1].additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    assert otel.values(ESCALATIONS, "instance", "tool", "detector", "behavior", "acted") == {
        (INSTANCES[agent.face], "probe", "repeat", "end", True): 1
    }
    assert otel.values(CALLS, "instance") == {(INSTANCES[agent.face],): 5}
    (streak,) = otel.points(STREAK)
    assert streak.count == 1  # the reminder at 3; the escalation is no reminder


def test_an_escalation_in_observe_mode_is_recorded_as_not_acted(otel: Reader) -> None:
    agent = build(
        "middleware",
        scripted(repeat("probe", SAME, 6)),
        thresholds=[3],
        escalate_after=5,
        mode="observe",
        meter_provider=otel.provider,
    )
    agent.invoke(ask())

    assert otel.values(ESCALATIONS, "behavior", "acted") == {("end", False): 1}


def test_every_detector_is_a_value_of_one_attribute(otel: Reader) -> None:
    # Three calls with different arguments failing with one error text (the tool quotes only
    # the first ten characters of `body`), then three identical calls of another tool.
    failing = [turn(call("probe", {"body": f"broken pipe {n}"})) for n in range(3)]
    agent = build(
        "middleware",
        scripted([*failing, *repeat("other", SAME, 3)]),
        detect=["repeat", "same_error"],
        error_pattern=r"^probed broken",
        meter_provider=otel.provider,
    )
    agent.invoke(ask())

    assert otel.values(REMINDERS, "tool", "detector") == {
        ("probe", "same_error"): 1,
        ("other", "repeat"): 1,
    }


def test_a_handler_without_a_node_records_its_reminders_as_not_delivered(otel: Reader) -> None:
    guard = RepeatToolReminderCallbackHandler(meter_provider=otel.provider)
    graph = create_agent(scripted(repeat("probe", SAME, 3)), tools=[probe])
    with pytest.warns(RepeatToolReminderWarning, match="reach no model"):
        result = graph.invoke(ask(), {"callbacks": [guard]})

    assert_adjacent(result["messages"])
    assert otel.values(REMINDERS, "level", "delivered") == {("gentle", False): 1}
    assert otel.values(CALLS, "instance") == {("RepeatToolReminderCallbackHandler",): 3}


def test_the_handlers_node_records_on_its_handlers_meter(otel: Reader) -> None:
    handler = RepeatToolReminderCallbackHandler(meter_provider=otel.provider)
    node = RepeatToolReminderNode(handler)

    assert node.stats is handler.stats
    with pytest.raises(TypeError, match="the handler has its own configuration"):
        RepeatToolReminderNode(handler, meter_provider=otel.provider)


def test_instances_are_told_apart_by_name(otel: Reader) -> None:
    searches = RepeatToolReminderMiddleware(include=["probe"], meter_provider=otel.provider)
    named = RepeatToolReminderMiddleware(name="the rest", meter_provider=otel.provider)
    state_node = RepeatToolReminderNode(exclude=["other"], meter_provider=otel.provider)
    handler = RepeatToolReminderCallbackHandler(include=["a*", "b"], meter_provider=otel.provider)
    graph = create_agent(
        scripted(repeat("probe", SAME, 3)), tools=[probe], middleware=[searches, named]
    )
    assert_adjacent(graph.invoke(ask())["messages"])

    # A guard that has counted nothing yet reports 0, so that a rate starts from its start.
    assert otel.values(CALLS, "instance") == {
        ("RepeatToolReminderMiddleware[include=probe]",): 3,
        ("the rest",): 3,
        ("RepeatToolReminderNode[exclude=other]",): 0,
        ("RepeatToolReminderCallbackHandler[include=a*,b]",): 0,
    }
    assert otel.values(REMINDERS, "instance") == {
        ("RepeatToolReminderMiddleware[include=probe]",): 1,
        ("the rest",): 1,
    }
    assert (state_node.stats.metrics, handler.stats.metrics) != (None, None)


def test_guards_sharing_a_name_add_up_and_outlive_their_instances(otel: Reader) -> None:
    # A guard built per request: its calls stay counted once it is gone.
    for _ in range(2):
        guard = RepeatToolReminderMiddleware(meter_provider=otel.provider)
        graph = create_agent(scripted(repeat("probe", SAME, 2)), tools=[probe], middleware=[guard])
        assert_adjacent(graph.invoke(ask())["messages"])
        del guard, graph
        gc.collect()

    assert otel.values(CALLS, "instance") == {("RepeatToolReminderMiddleware",): 4}


def test_meter_provider_false_records_nothing(otel: Reader) -> None:
    guard = RepeatToolReminderMiddleware(meter_provider=False)
    assert guard.stats.metrics is None
    assert RepeatToolReminderCallbackHandler(meter_provider=False).stats.metrics is None
    assert RepeatToolReminderNode(meter_provider=False).stats.metrics is None


def test_the_default_is_the_global_provider(
    fresh_registry: guard_metrics._Registry, otel: Reader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("opentelemetry.metrics.get_meter_provider", lambda: otel.provider)
    agent = build("middleware", scripted(repeat("probe", SAME, 3)))
    agent.invoke(ask())

    assert otel.values(REMINDERS, "level") == {("gentle",): 1}


def test_guards_built_before_the_sdk_is_set_up_record_once_it_is(
    fresh_registry: guard_metrics._Registry, otel: Reader, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What an application does: its agents (and guards) are built at import, the SDK is set
    # up in main(). Until then the global provider is OpenTelemetry's proxy, whose
    # instruments forward to the real ones once a provider is set.
    proxy = _ProxyMeterProvider()
    current: list[Any] = [proxy]
    monkeypatch.setattr("opentelemetry.metrics.get_meter_provider", lambda: current[0])
    early = build("middleware", LoopModel(), name="early")
    early.invoke(ask("loop 3"))  # counted before the SDK: recorded nowhere

    proxy.on_set_meter_provider(otel.provider)
    current[0] = otel.provider
    later = build("handler", scripted(repeat("probe", SAME, 3)))
    given = build("state", scripted(repeat("probe", SAME, 3)), meter_provider=otel.provider)
    early.invoke(ask("loop 3"))
    later.invoke(ask())
    given.invoke(ask())

    assert otel.values(CALLS, "instance") == {
        ("early",): 6,  # the calls before the SDK too: they are added up by the guard
        ("RepeatToolReminderCallbackHandler",): 3,
        ("RepeatToolReminderNode",): 3,
    }
    assert otel.values(REMINDERS, "instance") == {
        ("early",): 1,  # the reminder before the SDK went to the proxy: nowhere
        ("RepeatToolReminderCallbackHandler",): 1,
        ("RepeatToolReminderNode",): 1,
    }


def test_the_instruments_of_a_provider_are_made_once(
    fresh_registry: guard_metrics._Registry, otel: Reader
) -> None:
    first = metrics_for(otel.provider, "a")
    second = metrics_for(otel.provider, "b")
    other = metrics_for(NoOpMeterProvider(), "a")

    assert first is not None and second is not None and other is not None
    assert first._instruments is second._instruments
    assert other._instruments is not first._instruments


def test_a_provider_gone_takes_its_instruments_with_it(
    fresh_registry: guard_metrics._Registry,
) -> None:
    provider = MeterProvider(shutdown_on_exit=False)
    metrics_for(provider, "a")
    assert len(fresh_registry._by_provider) == 1

    del provider
    gc.collect()
    assert fresh_registry._by_provider == {}


@pytest.mark.parametrize("bad", ["global", True, 0, object(), NoOpMeterProvider])
def test_a_bad_meter_provider_is_refused_at_construction(bad: object) -> None:
    expected = "meter_provider must be an opentelemetry MeterProvider, None .* or False"
    with pytest.raises(TypeError, match=expected):
        RepeatToolReminderMiddleware(meter_provider=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=expected):
        RepeatToolReminderCallbackHandler(meter_provider=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=expected):
        RepeatToolReminderNode(meter_provider=bad)  # type: ignore[arg-type]


class Broken:
    """An instrument whose SDK fails on every measurement."""

    def add(self, *args: Any) -> None:
        raise RuntimeError("exporter down")

    record = add


def test_a_failing_sdk_never_fails_the_run(
    guarded: Make, otel: Reader, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 5)), meter_provider=otel.provider)
    instruments = agent.stats.metrics._instruments  # type: ignore[union-attr]
    instruments.streak = Broken()  # type: ignore[assignment]
    instruments.reminders = Broken()  # type: ignore[assignment]
    with caplog.at_level(logging.DEBUG, logger="repeat_reminder_langchain"):
        messages = agent.invoke(ask())

    assert len([m for m in messages if m.additional_kwargs.get("repeat_tool_reminder")]) == 2
    assert agent.stats.snapshot()["reminders"] == {"probe": {"gentle": 1, "detailed": 1}}
    failures = [
        r for r in caplog.records if r.getMessage() == "repeat reminder metrics not recorded"
    ]
    # Said once at WARNING, with the error; after that only at DEBUG.
    assert [r.levelno for r in failures] == [logging.WARNING, logging.DEBUG]
    assert "exporter down" in caplog.text
    assert otel.values(CALLS, "instance") == {(INSTANCES[agent.face],): 5}


def test_a_count_of_nothing_records_nothing(otel: Reader) -> None:
    recorder = metrics_for(otel.provider, "quiet")
    assert recorder is not None
    stats = Stats(recorder)
    stats.add(Count(None), delivered=False)
    reminder = Reminder("grep", 3, "gentle", "{}")
    stats.add(Count(None, [reminder]), delivered=True)

    assert otel.values(CALLS, "instance") == {("quiet",): 0}
    assert otel.values(REMINDERS, "tool", "delivered") == {("grep", True): 1}


GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "metrics.md"


def test_the_guides_example_prints_what_it_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    (runnable,) = [block for block in blocks if not block.startswith("# Excerpt: ")]
    script = tmp_path / "guide.py"
    script.write_text(runnable, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")

    promised = [line.removeprefix("# ") for line in runnable.splitlines() if line.startswith("# ")]
    assert capsys.readouterr().out.splitlines() == promised
