"""The demo: an agent that keeps polling a job that has already finished.

Everything runs offline. The model is scripted: it polls the job, ignores the first (gentle)
reminder, and changes course at the first detailed one: it reads the job's log and answers.
Without the guard it would poll until its patience runs out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from ..callbacks import RepeatToolReminderCallbackHandler
from ..graph import RepeatToolReminderNode
from ..reminder import SOURCE, is_reminder

__all__ = ["QUESTION", "PollingModel", "build_agent", "run_demo"]

JOB = "nightly-build-7"
QUESTION = f"Why did the CI job {JOB} fail?"


@tool
def job_status(job_id: str) -> str:
    """Report the status of a CI job."""
    return f"{job_id}: finished at 02:14, exit code 1, log at logs/{job_id}.txt"


@tool
def read_log(path: str) -> str:
    """Read a log file."""
    return (
        "02:13:52 step migrate: applying 0042_add_users_email\n"
        '02:13:58 ERROR relation "users_email_key" already exists\n'
        "02:14:00 build failed"
    )


TOOLS: list[BaseTool] = [job_status, read_log]


class PollingModel(BaseChatModel):
    """A scripted chat model that keeps polling a finished job until told plainly to stop.

    It reads the conversation, not a fixed script, so it reacts to what the guard says: it
    ignores a gentle reminder and changes course after a detailed one (or after `patience`
    polls, standing in for a budget running out).
    """

    patience: int = 12

    @property
    def _llm_type(self) -> str:
        return "scripted-polling-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> PollingModel:
        """Tools are known in advance; binding changes nothing."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        turns = sum(isinstance(m, AIMessage) for m in messages)
        polls = sum(
            1
            for m in messages
            if isinstance(m, AIMessage)
            for c in m.tool_calls
            if c["name"] == "job_status"
        )
        log = next(
            (m for m in messages if isinstance(m, ToolMessage) and m.name == "read_log"), None
        )
        told_to_stop = any(
            is_reminder(m) and m.additional_kwargs[SOURCE]["level"] == "detailed" for m in messages
        )
        if log is not None:
            return AIMessage(
                f"{JOB} failed in the migrate step: migration 0042_add_users_email tried to "
                'create "users_email_key", which already exists. Make the migration skip an '
                "existing key, then re-run the job."
            )
        if told_to_stop or polls >= self.patience:
            say = "The status will not change. I should read the log instead."
            return _call(turns, say, "read_log", {"path": f"logs/{JOB}.txt"})
        say = "Let me check the job." if polls == 0 else "Maybe it changed; checking again."
        return _call(turns, say, "job_status", {"job_id": JOB})


def _call(turn: int, say: str, name: str, args: dict[str, Any]) -> AIMessage:
    call = {"name": name, "args": args, "id": f"call_{turn}", "type": "tool_call"}
    return AIMessage(say, tool_calls=[call])


def build_agent(
    model: BaseChatModel, guard: RepeatToolReminderCallbackHandler | None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent: model → tools → reminder node → model (no reminder node without a guard)."""
    bound = model.bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    if guard is None:
        builder.add_edge("tools", "agent")
    else:
        builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
        builder.add_edge("tools", "repeat_reminder")
        builder.add_edge("repeat_reminder", "agent")
    return builder.compile()


def run_demo(guard: RepeatToolReminderCallbackHandler | None) -> list[BaseMessage]:
    """Run the demo agent, with the guard or without it, and return the conversation."""
    agent = build_agent(PollingModel(), guard)
    config: RunnableConfig = {"callbacks": [guard]} if guard else {}
    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    return list(result["messages"])
