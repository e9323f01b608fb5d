"""The detectors, each a class the counter shows every tracked call; nothing here knows LangChain.

`DETECTORS` names them in the order they take precedence when several fire on one call: the one
place that order is set. Adding a detector is a module with a class that keeps to `Detector`, an
entry here, and its tests: its settings, its memory in the record and its words reach every
part of the guard (the configuration, the command line, the audit) from its declarations.
"""

from __future__ import annotations

from ._detector import Detector, Seen, Settings, Words
from .cycle import Cycle
from .recurring_error import RecurringError
from .repeat import Repeat
from .same_error import SameError
from .same_output import SameOutput
from .stale import STALE_MEMORY, Stale

__all__ = ["DETECTORS", "STALE_MEMORY", "Detector", "Seen", "Settings", "Words"]

DETECTORS: dict[str, type[Detector]] = {
    detector.name: detector
    for detector in (Repeat, SameError, RecurringError, Stale, Cycle, SameOutput)
}
"""Every detector by name, in the order they take precedence."""
