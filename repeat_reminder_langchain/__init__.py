"""A loop guard for LangChain and LangGraph agents.

It counts consecutive calls of the same tool with the same canonical arguments, per agent, and
at thresholds adds an advisory reminder after the tool results. It never blocks, delays or
rewrites a call or a result: the model decides.
"""

from .callbacks import RepeatToolReminderCallbackHandler
from .canonical import canonicalize
from .config import ReminderConfig
from .graph import RepeatToolReminderNode, RepeatToolReminderState
from .messages import prepare_messages
from .middleware import RepeatToolReminderMiddleware
from .reminder import Reminder, is_reminder

__all__ = [
    "Reminder",
    "ReminderConfig",
    "RepeatToolReminderCallbackHandler",
    "RepeatToolReminderMiddleware",
    "RepeatToolReminderNode",
    "RepeatToolReminderState",
    "canonicalize",
    "is_reminder",
    "prepare_messages",
]
