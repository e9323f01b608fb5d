"""How the faces refuse a guard given to the wrong place, or asked what it cannot do there."""

from __future__ import annotations

from typing import Any

from ._config import ReminderConfig
from ._exits import EXITS

__all__ = ["Misplaced", "refuse_block"]


class Misplaced:
    """An attribute that the wrong place reads first: an error that names the right one.

    `create_agent` reads a middleware's hooks from its class, LangChain's callback manager a
    handler's flags; a guard given to the one that is not its own fails there, clearly.
    """

    def __init__(self, message: str) -> None:
        self.message = message

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise AttributeError(self.message)


def refuse_block(config: ReminderConfig) -> None:
    """Refuse `exit_behavior="block"` on a face that cannot see a call before it runs."""
    if config.escalate_after is not None and EXITS[config.exit_behavior].refuses:
        raise TypeError(
            'exit_behavior="block" needs RepeatToolReminderMiddleware: only middleware sees '
            "a call before it runs"
        )
