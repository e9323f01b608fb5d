"""The guard as `create_agent` middleware, its streaks kept in the agent's checkpointed state."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
    ToolCallRequest,
    hook_config,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import Command
from langgraph.typing import ContextT
from typing_extensions import Unpack, override

from ._conversation import predict_escalation, tally_conversation
from ._steps import Asked, StateStore, act
from ._streaks import Streaks, Tally
from .config import ReminderConfig, ReminderFields, resolve_config
from .escalation import RepeatToolLoopError
from .events import areport, current_run_config, report, thread_of
from .messages import as_user_turn, blocked_result, keeps_system_messages, prepare_messages
from .policy import ToolPolicies
from .reminder import LOGGER_NAME, SOURCE, is_reminder
from .stats import Stats

__all__ = ["RepeatToolReminderMiddleware", "RepeatToolReminderMiddlewareState"]

logger = logging.getLogger(LOGGER_NAME)


class RepeatToolReminderMiddlewareState(AgentState[ResponseT]):
    """Agent state with the guard's streaks: checkpointed, but not part of input or output.

    The field maps each middleware instance's `name` to what it remembers.
    """

    repeat_tool_reminder: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class RepeatToolReminderMiddleware(
    AgentMiddleware[RepeatToolReminderMiddlewareState[ResponseT], ContextT, ResponseT]
):
    """Reminds the model when it repeats a tool call with the same arguments.

    Before each model call it counts the tool turn that just finished, from the conversation
    itself: every call of the last `AIMessage`, in the order the model wrote them, including
    calls to unknown tools, calls refused by `HumanInTheLoopMiddleware`, and calls whose
    arguments or tool failed. At each threshold it appends a tagged reminder after the turn's
    tool results. Nothing is blocked or rewritten, unless `escalate_after` asks for it.

    What it remembers lives in a private state field, so it survives checkpoints, interrupts,
    process restarts and several workers sharing one checkpointer. A new user message resets
    it. `stats` holds running totals for this instance; tools that declare a policy in their
    metadata are read as they run.

    Several instances can guard one agent, each with its own counts (one policy for search
    tools and another for the rest, say): instances whose `include` or `exclude` differ get
    different names by themselves; otherwise give each a `name`.

    A `SystemMessage` reminder (the default `message_type`) reaches a model whose profile
    does not declare `mid_conversation_system_messages` as a `<system-reminder>` user turn,
    and is kept in that form, so that the conversation in state is what the model read.

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        name: The instance's name (default: the class name, with `include`/`exclude`).
        **fields: `ReminderConfig` fields.

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

    state_schema = RepeatToolReminderMiddlewareState  # type: ignore[assignment]  # as LangChain's own do

    def __init__(
        self,
        config: ReminderConfig | None = None,
        *,
        name: str | None = None,
        **fields: Unpack[ReminderFields],
    ) -> None:
        super().__init__()
        self.config = resolve_config(config, fields)
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        self._name = name or _default_name(self.config)
        self.stats = Stats()
        self.tool_policies = ToolPolicies()
        self._store = StateStore(SOURCE, self._name)
        self._asked = Asked()
        # The chat model seen last, and whether it takes a system message mid-conversation:
        # reminders are stored in the form it takes, so no model call has to convert them.
        self._model: object = None
        self._keeps_system: bool | None = None
        self._sees = self.config.mode == "remind"  # whether the model sees the reminders
        self._blocks = (
            self.config.escalate_after is not None
            and self.config.exit_behavior == "block"
            and self.config.mode == "remind"
        )

    @property
    def name(self) -> str:
        """The instance's name, which keeps its counts apart from another instance's."""
        return self._name

    @override
    @hook_config(can_jump_to=["end"])
    def before_model(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the finished turn; add the reminders it draws, or stop the loop."""
        counted = self._count(state)
        if counted is None:
            return None
        tally, before, stored = counted
        if self._reports(tally):
            report(tally, self.stats, self.config, None)
        return self._act(state, tally, before, stored)

    @override
    async def abefore_model(
        self, state: RepeatToolReminderMiddlewareState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Count the finished turn; add the reminders it draws, or stop the loop."""
        counted = self._count(state)
        if counted is None:
            return None
        tally, before, stored = counted
        if self._reports(tally):
            await areport(tally, self.stats, self.config, None)
        return self._act(state, tally, before, stored)

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """Send stored reminders in a form the provider accepts; see if the model recovers."""
        stored = self._stored(request)
        if not stored:  # most calls: no reminder to convert or follow up
            return handler(request)
        prepared, update = self._prepare(request, stored)
        return self._answered(request, handler(prepared), stored, update)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """Send stored reminders in a form the provider accepts; see if the model recovers."""
        stored = self._stored(request)
        if not stored:  # most calls: no reminder to convert or follow up
            return await handler(request)
        prepared, update = self._prepare(request, stored)
        return self._answered(request, await handler(prepared), stored, update)

    @override
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Read the policy the tool declares, then run it (unless escalation blocks it)."""
        blocked = self._blocked(request)
        return blocked if blocked is not None else handler(request)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Read the policy the tool declares, then run it (unless escalation blocks it)."""
        blocked = self._blocked(request)
        return blocked if blocked is not None else await handler(request)

    # -- counting -------------------------------------------------------------------------

    def _count(self, state: Any) -> tuple[Tally, Streaks, Mapping[str, Any]] | None:
        try:
            stored, before = self._store.read(state)
            tally = tally_conversation(
                before, state["messages"], self.config, self.tool_policies, seen_by_model=self._sees
            )
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return None
        return tally, before, stored

    def _reports(self, tally: Tally) -> bool:
        if not (tally.calls or tally.followups):
            return False
        if tally.escalation is None:
            return True
        return self._asked.first_time(tally, self.config, thread_of(current_run_config()))

    def _act(
        self, state: Any, tally: Tally, before: Streaks, stored: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        try:
            if not tally.reminders and tally.escalation is None:
                # Most turns: nothing to add, only the streaks to keep.
                if tally.streaks == before:
                    return None
                return self._keep(state, tally.streaks, stored, [])
            thread = thread_of(current_run_config()) if tally.escalation is not None else None
            action = act(tally, self.config, self._message_type(), thread)
            update = self._keep(state, action.streaks, stored, action.messages)
            if action.messages:
                update["messages"] = action.messages
            if action.end:
                update["jump_to"] = "end"
        except (RepeatToolLoopError, GraphBubbleUp):
            raise
        except Exception:
            logger.exception("repeat reminder middleware failed; the run goes on without it")
            return None
        return update

    def _keep(
        self,
        state: Any,
        streaks: Streaks,
        stored: Mapping[str, Any],
        messages: Sequence[BaseMessage],
    ) -> dict[str, Any]:
        """The state update that keeps `streaks`.

        It notes whether system reminders are stored: the next model call may have to send
        them as user turns.
        """
        if stored.get("system") or (messages and any(m.type == "system" for m in messages)):
            return self._store.write(state, streaks, _SYSTEM_STORED)
        return self._store.write(state, streaks)

    def _message_type(self) -> Literal["system", "human"]:
        if self.config.message_type == "system" and self._keeps_system is False:
            return "human"
        return self.config.message_type

    # -- model calls ----------------------------------------------------------------------

    def _keeps(self, model: object) -> bool:
        if model is not self._model:
            self._model, self._keeps_system = model, keeps_system_messages(model)
        return bool(self._keeps_system)

    def _stored(self, request: ModelRequest[ContextT]) -> Mapping[str, Any]:
        """What this instance stored, if a model call has to act on it: empty otherwise.

        A call acts on stored system reminders (when the model needs them as user turns) and
        on a reminder the model saw (its answer says whether it recovered).
        """
        try:
            keeps = self._keeps(request.model)  # also the form of reminders stored next
            stored = self._store.stored(request.state)
            if stored.get("reminded") is True or (stored.get("system") and not keeps):
                return stored
        except Exception:
            logger.exception("repeat reminder rendering failed; messages sent as stored")
        return _EMPTY

    def _prepare(
        self, request: ModelRequest[ContextT], stored: Mapping[str, Any]
    ) -> tuple[ModelRequest[ContextT], dict[str, Any]]:
        """The request, with stored system reminders as user turns if the model needs them.

        Also returns the state update that keeps them in that form.
        """
        try:
            if not stored.get("system") or self._keeps(request.model):
                return request, {}
            messages = prepare_messages(request.messages, request.model)
            converted = [
                as_user_turn(m)
                for m in request.messages
                if m.type == "system" and is_reminder(m) and m.id is not None
            ]
            update = {
                "messages": converted,
                **self._store.update(request.state, {**stored, "system": False}),
            }
            return request.override(messages=cast("list[AnyMessage]", messages)), update
        except Exception:
            logger.exception("repeat reminder rendering failed; messages sent as stored")
            return request, {}

    def _answered(
        self,
        request: ModelRequest[ContextT],
        response: ModelResponse[ResponseT],
        stored: Mapping[str, Any],
        update: dict[str, Any],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """The response, and the state update if the model answered after a reminder.

        A model that answers without a call after a reminder it saw has recovered.
        """
        try:
            if update:
                stored = update[SOURCE][self._name]
            if stored.get("reminded") is True and _answers(response):
                self.stats.add_followup(recovered=True)
                update = {
                    **update,
                    **self._store.update(request.state, {**stored, "reminded": False}),
                }
        except Exception:
            logger.exception("repeat reminder bookkeeping failed; the run goes on")
        if not update:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    # -- tool calls -----------------------------------------------------------------------

    def _blocked(self, request: ToolCallRequest) -> ToolMessage | None:
        tool = request.tool
        self.tool_policies.learn(getattr(tool, "name", None), getattr(tool, "metadata", None))
        if not self._blocks:
            return None
        try:
            call_id = request.tool_call.get("id") or ""
            escalation = predict_escalation(
                self._store.streaks(request.state),
                request.state.get("messages", ()),
                call_id,
                self.config,
                self.tool_policies,
            )
        except Exception:
            logger.exception("repeat reminder check failed; the call runs")
            return None
        return None if escalation is None else blocked_result(escalation, call_id)


_EMPTY: Mapping[str, Any] = {}
_SYSTEM_STORED: Mapping[str, Any] = {"system": True}


def _answers(response: ModelResponse[Any]) -> bool:
    """Whether the model answered instead of calling a tool."""
    if response.structured_response is not None:
        return True
    messages = [m for m in response.result if isinstance(m, AIMessage)]
    return bool(messages) and not messages[-1].tool_calls


def _default_name(config: ReminderConfig) -> str:
    scope = []
    if config.include:
        scope.append("include=" + ",".join(config.include))
    if config.exclude:
        scope.append("exclude=" + ",".join(config.exclude))
    base = RepeatToolReminderMiddleware.__name__
    return f"{base}[{'; '.join(scope)}]" if scope else base
