"""The graph node that adds the reminders, right after a turn's tool results."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, NotRequired

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import MessagesState
from typing_extensions import Unpack

from ._conversation import read_messages, read_state, tally_conversation
from ._steps import Action, Asked, StateStore, act
from ._streaks import Streaks, Tally
from .callbacks import AgentKey, RepeatToolReminderCallbackHandler
from .config import ReminderConfig, ReminderFields, resolve_config
from .escalation import RepeatToolLoopError
from .events import report, thread_of
from .policy import ToolPolicies
from .reminder import LOGGER_NAME, SOURCE, tag_of
from .stats import Stats

__all__ = ["RepeatToolReminderNode", "RepeatToolReminderState"]

logger = logging.getLogger(LOGGER_NAME)


class RepeatToolReminderState(MessagesState):
    """`MessagesState` with a field for the guard's streaks, for `RepeatToolReminderNode()`.

    Build the graph with `StateGraph(RepeatToolReminderState, input_schema=MessagesState,
    output_schema=MessagesState)` to keep the field out of the graph's input and output: it is
    then checkpointed, but a caller can neither see nor set it.
    """

    repeat_tool_reminder: NotRequired[dict[str, Any]]


class RepeatToolReminderNode:
    """A LangGraph node, placed between the tools node and the model node, that adds reminders.

    It reads the conversation, counts the tool turn that just finished, and returns one tagged
    message per reminder due (none most of the time). It runs after the whole block of tool
    results, so an assistant turn is always followed by all its results first. It never
    changes a tool result and never fails the run: a problem is logged.

    Where the counts live depends on how it is built:

    * `RepeatToolReminderNode(handler)`: in the `RepeatToolReminderCallbackHandler` passed in
      the run's callbacks, which keeps every agent's streaks and needs no state field.
    * `RepeatToolReminderNode(**fields)` or `RepeatToolReminderNode(config=...)`: in the graph
      state, under `state_key`, so the counts are checkpointed with the conversation and
      survive interrupts, restarts and several worker processes. The state needs that field:
      use `RepeatToolReminderState`, or add `repeat_tool_reminder: NotRequired[dict]` to yours.

    With `escalate_after`, the node stops a loop as `exit_behavior` says: `"error"` raises
    `RepeatToolLoopError`, `"interrupt"` pauses for a human; `"end"` adds a final message
    and needs the node's `route` to leave the graph (a node cannot end a run on its own: the
    graph's edges decide where it goes next):
    `builder.add_conditional_edges("repeat_reminder", node.route, {"continue": "agent",
    "end": END})`. `"block"` needs the middleware, the only face that sees a call before it
    runs.

    Args:
        handler: The handler passed in the run's callbacks, or None to keep the counts in
            state.
        config: A `ReminderConfig`, when there is no handler (the handler has its own).
        messages_key: The state key holding the messages.
        state_key: The state key holding the counts, when there is no handler.
        tools: The graph's tools, whose metadata may declare their own policy (with a
            handler, the handler reads it as the tools run).
        **fields: `ReminderConfig` fields, when there is no handler.

    Example:
        ```python
        guard = RepeatToolReminderCallbackHandler()
        builder.add_node("tools", ToolNode(tools))
        builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
        builder.add_edge("tools", "repeat_reminder")
        builder.add_edge("repeat_reminder", "agent")
        graph.invoke(inputs, config={"callbacks": [guard]})
        ```
    """

    def __init__(
        self,
        handler: RepeatToolReminderCallbackHandler | None = None,
        *,
        config: ReminderConfig | None = None,
        messages_key: str = "messages",
        state_key: str = SOURCE,
        tools: Sequence[Any] = (),
        **fields: Unpack[ReminderFields],
    ) -> None:
        if handler is not None and not isinstance(handler, RepeatToolReminderCallbackHandler):
            raise TypeError(
                "RepeatToolReminderNode takes a RepeatToolReminderCallbackHandler or none, got "
                f"{type(handler).__name__}"
            )
        if handler is not None and (config is not None or fields):
            raise TypeError("the handler has its own configuration; pass it there")
        self.handler = handler
        self.config = handler.config if handler is not None else resolve_config(config, fields)
        if self.config.escalate_after is not None and self.config.exit_behavior == "block":
            raise TypeError(
                'exit_behavior="block" needs RepeatToolReminderMiddleware: only middleware sees '
                "a call before it runs"
            )
        self.messages_key = messages_key
        self.state_key = state_key
        self.stats = handler.stats if handler is not None else Stats()
        self.tool_policies = handler.tool_policies if handler is not None else ToolPolicies()
        for tool in tools:
            self.tool_policies.learn(getattr(tool, "name", None), getattr(tool, "metadata", None))
        self._store = StateStore(state_key)
        self._asked = Asked()
        self._sees = self.config.mode == "remind"  # whether the model sees the reminders
        # The threads this node stored counts for (None for runs without one): a thread
        # that comes back without them has a state without the field.
        self._stored_for: dict[str | None, None] = {}
        self._warned = False
        self._warned_placement = False

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """Return the state update for the turn that just finished (empty most of the time)."""
        try:
            counted = self._count(state, config)
            if counted is None:
                return {}
            tally, before, agent = counted
            if tally.waiting:
                self._warn_placement()
            # Only an escalation needs to know the thread (to name it, or to ask once).
            thread = thread_of(config) if tally.escalation is not None else None
            if (tally.calls or tally.followups) and self._asked.first_time(
                tally, self.config, thread
            ):
                report(tally, self.stats, self.config, config)
        except Exception:
            logger.exception("repeat reminder node failed; the run goes on without reminders")
            return {}
        try:
            if not tally.reminders and tally.escalation is None:
                action = Action(tally.streaks, [])  # most turns
            else:
                action = act(tally, self.config, self.config.message_type, thread)
            return self._keep(state, config, agent, before, action)
        except (RepeatToolLoopError, GraphBubbleUp):
            raise
        except Exception:
            logger.exception("repeat reminder node failed; the run goes on without reminders")
            return {}

    def route(self, state: Any) -> Literal["continue", "end"]:
        """Where the graph goes after the node: `"end"` once it ended a looping run.

        For `exit_behavior="end"`:
        `builder.add_conditional_edges("repeat_reminder", node.route, {"continue": "agent",
        "end": END})`.
        """
        messages = read_messages(state, self.messages_key)
        last = messages[-1] if messages else None
        ended = isinstance(last, AIMessage) and (tag_of(last) or {}).get("level") == "escalated"
        return "end" if ended else "continue"

    def _count(
        self, state: Any, config: RunnableConfig
    ) -> tuple[Tally, Streaks, AgentKey | None] | None:
        """The tally of the finished turn, the streaks before it, and the handler's agent."""
        messages = read_messages(state, self.messages_key)
        if self.handler is not None:
            counted = self.handler._node_count(messages, config) if messages else None
            if counted is None:
                return None
            agent, before, tally = counted
            return tally, before, agent
        stored, before = self._store.read(state)
        tally = tally_conversation(
            before, messages, self.config, self.tool_policies, seen_by_model=self._sees
        )
        if not stored and not self._warned:
            self._check_field(state, messages, thread_of(config))
        return tally, before, None

    def _keep(
        self,
        state: Any,
        config: RunnableConfig,
        agent: AgentKey | None,
        before: Streaks,
        action: Action,
    ) -> dict[str, Any]:
        """Keep the streaks the action leaves; the state update that adds its messages."""
        update: dict[str, Any] = {}
        if self.handler is not None and agent is not None:
            self.handler._node_keep(agent, before, action.streaks)
        elif action.streaks != before:
            update.update(self._store.write(state, action.streaks))
            if not self._warned:
                thread = thread_of(config)
                if thread not in self._stored_for:
                    if len(self._stored_for) >= self._store.limit:
                        self._stored_for.clear()
                    self._stored_for[thread] = None
        if action.messages:
            update[self.messages_key] = action.messages
        return update

    def _warn_placement(self) -> None:
        if self._warned_placement:
            return
        self._warned_placement = True
        logger.warning(
            "RepeatToolReminderNode ran before the results of the tool calls it follows, so it "
            "counts nothing: place it after the tools node (tools -> repeat_reminder -> model)."
        )

    def _check_field(self, state: Any, messages: Sequence[BaseMessage], thread: str | None) -> None:
        # Counts stored for this thread came back missing: the field is not in the state.
        # (Without a thread, runs share one key: the second tool turn confirms the run is
        # one the node stored counts in.)
        if (
            thread in self._stored_for
            and read_state(state, self.state_key) is None
            and _tool_turns(messages) >= 2
        ):
            self._warned = True
            logger.warning(
                "RepeatToolReminderNode keeps its counts in the state field %r, which this "
                "graph's state does not have, so nothing is remembered between turns: build "
                "the graph with RepeatToolReminderState or add the field to your state.",
                self.state_key,
            )


def _tool_turns(messages: Sequence[BaseMessage]) -> int:
    """How many model turns with tool calls there are, counting no further than two."""
    found = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            found += 1
            if found == 2:
                break
    return found
