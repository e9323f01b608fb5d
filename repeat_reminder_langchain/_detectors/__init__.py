"""The detectors, each a part the counter runs on every tracked call; nothing here knows LangChain.

`PARTS` names them in the order they take precedence when several fire on one call: the one
place that order is set. Adding a detector is a module with a class that keeps to `Part`, an
entry here, and its tests.
"""

from __future__ import annotations

from ._part import Part, Seen, Settings, Words
from .cycle import Cycle
from .recurring_error import RecurringError
from .repeat import Repeat
from .same_error import SameError
from .same_output import SameOutput
from .stale import STALE_MEMORY, Stale

__all__ = ["DETECTORS", "PARTS", "STALE_MEMORY", "Part", "Seen", "Settings", "Words"]

PARTS: dict[str, type[Part]] = {
    part.name: part for part in (Repeat, SameError, RecurringError, Stale, Cycle, SameOutput)
}
"""Every detector by name, in the order they take precedence."""

DETECTORS: tuple[str, ...] = tuple(PARTS)
"""Every detector's name, in the order they take precedence."""
