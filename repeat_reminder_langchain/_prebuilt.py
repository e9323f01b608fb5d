"""The state for LangGraph's prebuilt `create_react_agent` with the state-kept node."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langgraph.channels.untracked_value import UntrackedValue
from langgraph.prebuilt.chat_agent_executor import AgentState

__all__ = ["RepeatToolReminderAgentState"]


class RepeatToolReminderAgentState(AgentState):
    """`create_react_agent`'s state (messages and `remaining_steps`) with the guard's fields.

    As in `RepeatToolReminderState`: the counts, and the id of the run for its log lines.

    Example:
        ```python
        agent = create_react_agent(
            model,
            tools,
            pre_model_hook=RepeatToolReminderNode(),
            state_schema=RepeatToolReminderAgentState,
        )
        ```
    """

    repeat_tool_reminder: NotRequired[dict[str, Any]]
    repeat_tool_reminder_run: NotRequired[Annotated[str, UntrackedValue]]
