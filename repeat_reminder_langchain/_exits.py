"""How the guard stops a loop: one small object per `exit_behavior`, the one place each is said.

A guard reads its configuration's exit once (`EXITS[config.exit_behavior]`) and every part of
it asks that object, never the name: whether the call that reaches the limit is refused,
whether the model is asked for its answer with no tool to call, whether the run raises or pauses,
what the final message says and what the log line says it did.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["END", "EXITS", "Exit", "ExitBehavior"]

ExitBehavior = Literal["end", "finish", "error", "interrupt", "block"]


class Exit(NamedTuple):
    """One way of stopping a loop.

    Attributes:
        name: Its `exit_behavior`.
        done: What the log line says it did.
        words: Its final message (a format string of the `Escalation`'s fields and what the
            conversation says of the loop, `Recap`): the end of the run, or, for `finish`,
            the request for the model's answer.
        ends: A loop it stops may end the run with that message (on the node faces, through
            the node's route).
        asks_answer: The model is asked for its answer, in one more call with no tool to call
            (`tool_choice` none, or no tools); a call it makes all the same is refused, and the
            run ends.
        refuses: The call that reaches the limit gets an error result instead of running
            (only the middleware sees a call before it runs).
        raises: The run stops with `RepeatToolLoopError`.
        pauses: The run pauses for a human (`interrupt()`).
        refusal: The error result of a call not run, where it refuses one (a format string
            of `tool`, `count` and `what`, the detector's words for the loop).
    """

    name: ExitBehavior
    done: str
    words: str
    ends: bool = False
    asks_answer: bool = False
    refuses: bool = False
    raises: bool = False
    pauses: bool = False
    refusal: str = ""


_ENDED = (
    "Stopped: the agent was looping on `{tool}` ({what} {count} times). The run ended here "
    "instead of repeating the call again; the conversation is complete up to this point."
)

END = Exit(
    "end",
    "repeat tool loop stopped (end)",
    _ENDED,
    ends=True,
    # A call `block` refused, sent again: refused too, and the run ends.
    refusal=(
        "Not run: `{tool}` was refused, and called again with the same arguments ({count} "
        "times in a row): the run ends here, with what was found."
    ),
)
"""How a run ends that the guard stopped: also what ends a model that goes on after `finish`
asked for its answer, or after `block` refused its call."""

EXITS: dict[str, Exit] = {
    exit.name: exit
    for exit in (
        END,
        Exit(
            "finish",
            "repeat tool loop: the model is asked for its answer (finish)",
            # What an answer needs, not a description of the loop, which a small model says
            # back: measured on live models (the lab guide's table).
            "Reply to the user with the latest result of `{tool}`, as it is, and what is still "
            'unknown: "{result}"',
            ends=True,
            asks_answer=True,
            refusal=(
                "Not run: you were asked for your answer, since `{tool}` was looping. Answer "
                "the user now with what you have found."
            ),
        ),
        Exit("error", "repeat tool loop stopped (error)", _ENDED, raises=True),
        # Paused, not stopped: the human's answer decides, and is logged when it comes.
        Exit(
            "interrupt",
            "repeat tool loop: a human is asked what to do (interrupt)",
            _ENDED,
            pauses=True,
        ),
        Exit(
            "block",
            "repeat tool call refused",  # the model decides what comes next
            _ENDED,
            ends=True,
            refuses=True,
            refusal=(
                # In the words of the detector that reached the limit, as the final message.
                "Not run: `{tool}` is looping ({what} {count} times), and one more call will "
                "not change that. Choose a different action or different arguments, or "
                "finish with what you have."
            ),
        ),
    )
}
"""Every exit behaviour by its name."""
