"""The guard as `create_agent` middleware, its chain kept in the agent's checkpointed state."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
    ToolCallRequest,
)
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command
from langgraph.typing import ContextT
from typing_extensions import NotRequired, override

from .config import ReminderConfig, resolve_config
from .events import areport, report
from .messages import prepare_messages, state_update
from .policy import ToolSpecs
from .stats import Stats

__all__ = ["RepeatToolReminderMiddleware", "RepeatToolReminderMiddlewareState"]

logger = logging.getLogger("repeat_reminder_langchain")


class RepeatToolReminderMiddlewareState(AgentState[ResponseT]):
    """Agent state with the guard's chain: checkpointed, but not part of input or output."""

    repeat_tool_reminder: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class RepeatToolReminderMiddleware(
    AgentMiddleware[RepeatToolReminderMiddlewareState[ResponseT], ContextT, ResponseT]
):
    """Reminds the model when it repeats a tool call with the same arguments.

    Before each model call it counts the tool turn that just finished, from the conversation
    itself: every call of the last `AIMessage`, in the order the model wrote them, including
    calls to unknown tools, calls refused by `HumanInTheLoopMiddleware`, and calls whose
    arguments or tool failed. At each threshold it appends a tagged reminder after the turn's
    tool results. Nothing is blocked or rewritten.

    The count lives in a private state field, so it survives checkpoints, interrupts, process
    restarts and several workers sharing one checkpointer. A new user message resets it.
    `stats` holds running totals for this instance; tools that declare a policy in their
    metadata are read as they run.

    Reminders are stored as the configured `message_type`; a stored `SystemMessage` reminder
    is sent as a `<system-reminder>` user turn to a model whose profile does not declare
    `mid_conversation_system_messages` (see `prepare_messages`).

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        **fields: `ReminderConfig` fields (`thresholds`, `include`, `exclude`,
            `arguments_preview_chars`, `message_type`, `repeat_every`, `ignore_arguments`,
            `progress`, `mode`).

    Example:
        ```python
        from langchain.agents import create_agent
        from repeat_reminder_langchain import RepeatToolReminderMiddleware

        agent = create_agent(
            "openai:gpt-4.1",
            tools=[read_file, grep],
            middleware=[RepeatToolReminderMiddleware(thresholds=[3, 5, 8], exclude=["todo_*"])],
        )
        ```

        With deepagents, put an instance in the main agent's `middleware` and one in each
        subagent spec's `"middleware"`: a main agent's middleware does not reach subagents.
    """

    state_schema = RepeatToolReminderMiddlewareState

    def __init__(self, config: ReminderConfig | None = None, **fields: Any) -> None:
        super().__init__()
        self.config = resolve_config(config, fields)
        self.stats = Stats()
        self.tool_specs = ToolSpecs()

    @override
    def before_model(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the finished turn and add the reminders it draws."""
        try:
            update, tally = state_update(state, self.config, self.tool_specs)
            report(tally, self.stats, self.config, _current_config())
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return None
        return update or None

    @override
    async def abefore_model(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the finished turn and add the reminders it draws."""
        try:
            update, tally = state_update(state, self.config, self.tool_specs)
            await areport(tally, self.stats, self.config, _current_config())
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return None
        return update or None

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT]:
        """Send stored reminders in a form the model's provider accepts."""
        return handler(self._prepared(request))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT]:
        """Send stored reminders in a form the model's provider accepts."""
        return await handler(self._prepared(request))

    @override
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Read the policy the tool declares, then run it unchanged."""
        self._learn(request.tool)
        return handler(request)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Read the policy the tool declares, then run it unchanged."""
        self._learn(request.tool)
        return await handler(request)

    def _learn(self, tool: object) -> None:
        self.tool_specs.learn(getattr(tool, "name", None), getattr(tool, "metadata", None))

    def _prepared(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        try:
            messages = prepare_messages(request.messages, request.model)
        except Exception:
            logger.exception("repeat reminder rendering failed; messages sent as stored")
            return request
        if messages is request.messages:
            return request
        return request.override(messages=cast("list[AnyMessage]", messages))


def _current_config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:  # called outside a graph run
        return None
