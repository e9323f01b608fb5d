"""OpenTelemetry metrics: what each guard counts, as counters and a histogram.

With `opentelemetry-api` installed, every guard records, per instance:

* `repeat_tool_reminder.calls` (`{call}`): tracked tool calls counted;
* `repeat_tool_reminder.reminders` (`{reminder}`): reminders due, by tool, level, detector
  and whether the model saw them;
* `repeat_tool_reminder.escalations` (`{escalation}`): loops stopped (or, unacted, that would
  have been), by tool, detector and exit behavior;
* `repeat_tool_reminder.streak` (`{call}`, a histogram): the count each reminder was due at.

Every point carries `repeat_tool_reminder.instance`, the guard's name. Instruments come from
the meter `repeat_reminder_langchain` of the global meter provider, or of the one a face is
given as `meter_provider=`; `meter_provider=False` records nothing. Without an SDK installed
and set up, the global provider is OpenTelemetry's no-op: nothing is kept or sent.

A guard's `Stats` passes each count on (`Stats.add`), so metrics and `stats.snapshot()` always
agree. Nothing here fails a run: an error of the metrics SDK is logged and dropped.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from . import __version__
from ._counter import Count
from ._install import install_hint
from ._log import LOGGER_NAME

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

__all__ = [
    "CALLS",
    "ESCALATIONS",
    "METER_NAME",
    "REMINDERS",
    "STREAK",
    "MeterProviderOption",
    "Metrics",
    "Tally",
    "metrics_for",
]

logger = logging.getLogger(LOGGER_NAME)

METER_NAME = "repeat_reminder_langchain"
REMINDERS = "repeat_tool_reminder.reminders"
ESCALATIONS = "repeat_tool_reminder.escalations"
CALLS = "repeat_tool_reminder.calls"
STREAK = "repeat_tool_reminder.streak"

INSTANCE = "repeat_tool_reminder.instance"
TOOL = "repeat_tool_reminder.tool"
LEVEL = "repeat_tool_reminder.level"
DETECTOR = "repeat_tool_reminder.detector"
DELIVERED = "repeat_tool_reminder.delivered"
BEHAVIOR = "repeat_tool_reminder.behavior"
ACTED = "repeat_tool_reminder.acted"

# Streaks are small integers: the default thresholds are 3, 5 and 8, and `repeat_every`
# goes on from there. OpenTelemetry's default buckets (0, 5, 10, 25, ...) would put most of
# them in two buckets.
STREAK_BUCKETS = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0, 30.0, 50.0, 100.0)

MeterProviderOption: TypeAlias = "MeterProvider | Literal[False] | None"
"""What a face's `meter_provider=` takes: a provider, None for the global one, False for none."""


@functools.cache
def _api() -> ModuleType | None:
    """`opentelemetry.metrics`, or None when opentelemetry-api is not installed."""
    try:
        return importlib.import_module("opentelemetry.metrics")
    except ImportError:
        return None


class Tally:
    """The tracked calls one guard counted, which its `Stats` adds to and its metrics read."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls = 0


class _Instruments:
    """The instruments of one meter, shared by every guard recording there.

    Counted calls are read from each guard's tally when the SDK collects: a synchronous
    counter would cost a measurement on every turn, this costs nothing more than the stats'
    own addition. The totals live as long as the meter provider: when a guard goes, its
    calls are kept in its instance's total, so that a guard built per request leaves a
    counter that only grows.
    """

    def __init__(self, meter: Meter, api: ModuleType) -> None:
        self._observation: type[Observation] = api.Observation
        self.reminders = meter.create_counter(
            REMINDERS, unit="{reminder}", description="Reminders due, delivered or not."
        )
        self.escalations = meter.create_counter(
            ESCALATIONS,
            unit="{escalation}",
            description="Loops the guard stopped, or would have stopped (acted=false).",
        )
        self.streak = meter.create_histogram(
            STREAK,
            unit="{call}",
            description="The count a detector had reached when a reminder was due.",
            explicit_bucket_boundaries_advisory=STREAK_BUCKETS,
        )
        self._lock = threading.Lock()
        self._live: dict[int, tuple[str, Tally]] = {}  # by the tally's id
        self._retired: dict[str, int] = {}  # calls of the guards gone, by instance
        self._gone: deque[int] = deque()
        meter.create_observable_counter(
            CALLS,
            callbacks=[self._observe_calls],
            unit="{call}",
            description="Tracked tool calls counted.",
        )

    def follow(self, instance: str, owner: object, tally: Tally) -> None:
        """Report `tally` as `instance`'s calls from now on, and after `owner` is gone."""
        with self._lock:
            self._settle()
            self._retired.setdefault(instance, 0)
            self._live[id(tally)] = (instance, tally)
        # Appended without the lock: the owner may be collected while the lock is held.
        weakref.finalize(owner, self._gone.append, id(tally))

    def _settle(self) -> None:
        """Move the calls of the guards gone into their instances' totals (lock held)."""
        while self._gone:
            instance, tally = self._live.pop(self._gone.popleft())
            self._retired[instance] += tally.calls

    def _observe_calls(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            self._settle()
            totals = dict(self._retired)
            for instance, tally in self._live.values():
                totals[instance] += tally.calls
        return [
            self._observation(calls, {INSTANCE: instance}) for instance, calls in totals.items()
        ]


class _Registry:
    """The instruments of each meter provider, made once per provider.

    Once per provider because an SDK keeps the first callbacks of an observable instrument
    and ignores those of a second one of the same name. For the same reason the global
    provider has one set whatever it is now: instruments made on it before an SDK provider
    was set forward to that provider once it is.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_provider: dict[int, _Instruments] = {}
        self._global: _Instruments | None = None

    def instruments(self, api: ModuleType, provider: MeterProvider | None) -> _Instruments:
        with self._lock:
            current = api.get_meter_provider()
            if provider is None or provider is current:
                if self._global is None:
                    self._global = self._of(api, current)
                return self._global
            return self._of(api, provider)

    def _of(self, api: ModuleType, provider: MeterProvider) -> _Instruments:
        key = id(provider)
        found = self._by_provider.get(key)
        if found is None:
            found = _Instruments(provider.get_meter(METER_NAME, __version__), api)
            self._by_provider[key] = found
            # Keyed by identity (a provider need not be hashable), forgotten with it.
            weakref.finalize(provider, self._by_provider.pop, key, None)
        return found


_REGISTRY = _Registry()


class Metrics:
    """Records one guard's counts on its meter's instruments; never raises.

    Attributes:
        instance: The guard's name, the `repeat_tool_reminder.instance` of every point.
    """

    __slots__ = ("_failed", "_instruments", "instance")

    def __init__(self, instruments: _Instruments, instance: str) -> None:
        self._instruments = instruments
        self.instance = instance
        self._failed = False

    def follow(self, owner: object, tally: Tally) -> None:
        """Report the calls `tally` counts, for as long as the meter provider lives."""
        self._instruments.follow(self.instance, owner, tally)

    def record(self, count: Count, delivered: bool) -> None:
        """Record the reminders and escalation a count found; `delivered`: whether they acted."""
        try:
            self._record_found(count, delivered)
        except Exception:
            # Said once at WARNING: a broken exporter would otherwise say it every turn.
            level = logging.DEBUG if self._failed else logging.WARNING
            self._failed = True
            logger.log(level, "repeat reminder metrics not recorded", exc_info=True)

    def _record_found(self, count: Count, delivered: bool) -> None:
        instruments = self._instruments
        for reminder in count.reminders:
            where: dict[str, Any] = {
                INSTANCE: self.instance,
                TOOL: reminder.tool,
                DETECTOR: reminder.detector,
            }
            instruments.streak.record(reminder.count, where)
            sent = delivered and reminder.reminds
            instruments.reminders.add(1, {**where, LEVEL: reminder.level, DELIVERED: sent})
        escalation = count.escalation
        if escalation is not None:
            instruments.escalations.add(
                1,
                {
                    INSTANCE: self.instance,
                    TOOL: escalation.tool,
                    DETECTOR: escalation.detector,
                    BEHAVIOR: escalation.behavior,
                    ACTED: delivered,
                },
            )


def metrics_for(meter_provider: MeterProviderOption, instance: str) -> Metrics | None:
    """The recorder of a guard named `instance`; None when it records nothing.

    `meter_provider`: an OpenTelemetry `MeterProvider`; None for the global one (recording
    only when opentelemetry-api is installed); False for no metrics.

    Raises:
        TypeError: `meter_provider` is none of these, or is a provider while opentelemetry-api
            is not installed.

    """
    if meter_provider is False:
        return None
    api = _api()
    if api is None:
        if meter_provider is None:
            return None
        raise TypeError(
            f"meter_provider needs opentelemetry-api: {install_hint('otel')} (got "
            f"{type(meter_provider).__name__})"
        )
    if meter_provider is not None and not isinstance(meter_provider, api.MeterProvider):
        raise TypeError(
            "meter_provider must be an opentelemetry MeterProvider, None (the global one) or "
            f"False (no metrics), got {meter_provider!r}"
        )
    return Metrics(_REGISTRY.instruments(api, meter_provider), instance)
