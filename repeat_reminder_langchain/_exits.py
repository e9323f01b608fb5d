"""How the guard stops a loop: one object per `exit_behavior`, the one place each is decided.

A guard reads its configuration's exit once (`EXITS[config.exit_behavior]`) and every part of
it asks that object, never the name: when a count calls for it (`due`), what it does then
(`carry_out`, which chooses one of the guard's `Actions`), what a model that goes on all the
same gets (`insisted`), what the final message and the log line say, and what a face must do
around the model and tool calls (`asks_answer`, `refuses`, `ends`, `pauses`).
"""

from __future__ import annotations

from typing import ClassVar, Literal, Protocol, TypeVar

__all__ = ["END", "EXITS", "Actions", "Exit", "ExitBehavior"]

ExitBehavior = Literal["end", "finish", "error", "interrupt", "block"]

_Done_co = TypeVar("_Done_co", covariant=True)


class Actions(Protocol[_Done_co]):
    """What a guard can do about a loop that reached `escalate_after`: the exit chooses one."""

    def remind(self) -> _Done_co:
        """Add the turn's reminders, as below the limit (the call was refused before it ran)."""

    def end(self) -> _Done_co:
        """End the run with the exit's final message."""

    def ask_answer(self) -> _Done_co:
        """Ask the model for its answer, in one more call with no tool to call."""

    def stop(self) -> _Done_co:
        """Stop the run with `RepeatToolLoopError`."""

    def ask_human(self) -> _Done_co:
        """Pause the run for a human (`interrupt()`); carry out their answer when it comes."""


class Exit:
    """One way of stopping a loop: `end` itself, and the base of the others.

    Attributes:
        name: Its `exit_behavior`.
        done: What the log line says it did.
        words: Its final message (a format string of the `Escalation`'s fields and what the
            conversation says of the loop, `LoopContext`): the end of the run, or, for `finish`,
            the request for the model's answer.
        refusal: The error result of a call not run, where it refuses one (a format string
            of `tool`, `count` and `what`, the detector's words for the loop).
        ends: A loop it stops may end the run with that message (on the node faces, through
            the node's route).
        asks_answer: The model is asked for its answer: its next call has no tool to call
            (`tool_choice` none, or no tools), and a call it makes all the same is refused
            (the face that owns the model call and the tool calls does both), and the run
            ends.
        refuses: The call that reaches the limit gets an error result instead of running
            (only the middleware sees a call before it runs).
        pauses: The run pauses for a human, and can resume only from a checkpoint.
    """

    __slots__ = ("done", "name", "refusal", "words")
    ends: ClassVar[bool] = True
    asks_answer: ClassVar[bool] = False
    refuses: ClassVar[bool] = False
    pauses: ClassVar[bool] = False

    def __init__(self, name: ExitBehavior, done: str, words: str, refusal: str = "") -> None:
        self.name, self.done, self.words, self.refusal = name, done, words, refusal

    def due(self, count: int, limit: int, *, reads_calls: bool, insisted: bool) -> Exit | None:
        """The exit a detector's `count` calls for: this one at the limit, else none.

        `reads_calls`: the detector counts from the calls alone (known before a call runs);
        `insisted`: the run the turn started with was at the limit, and every call since went
        on with it.
        """
        return self if count == limit else None

    def carry_out(self, actions: Actions[_Done_co]) -> _Done_co:
        """What the guard does about the loop: here, end the run."""
        return actions.end()

    @property
    def insisted(self) -> Exit:
        """What stops a model that goes on after this exit refused its call or asked for its answer.

        The run ends, as `end` ends it.
        """
        return END


class _Finish(Exit):
    __slots__ = ()
    asks_answer = True

    def carry_out(self, actions: Actions[_Done_co]) -> _Done_co:
        return actions.ask_answer()


class _Error(Exit):
    __slots__ = ()
    ends = False

    def carry_out(self, actions: Actions[_Done_co]) -> _Done_co:
        return actions.stop()


class _Interrupt(Exit):
    __slots__ = ()
    ends = False
    pauses = True

    def carry_out(self, actions: Actions[_Done_co]) -> _Done_co:
        return actions.ask_human()


class _Block(Exit):
    __slots__ = ()
    refuses = True

    def due(self, count: int, limit: int, *, reads_calls: bool, insisted: bool) -> Exit | None:
        # Refused before it runs, when only a count that needs no result is known: at the
        # limit and after (the detectors that read results keep reminding). A refused call
        # sent again after the model read its refusal ends the run.
        if not reads_calls or count < limit:
            return None
        return self.insisted if insisted else self

    def carry_out(self, actions: Actions[_Done_co]) -> _Done_co:
        return actions.remind()  # the call itself is refused before it runs


_ENDED = (
    "Stopped: the agent was looping on `{tool}` ({what} {count} times). The run ended here "
    "instead of repeating the call again; the conversation is complete up to this point."
)

END = Exit(
    "end",
    "repeat tool loop stopped (end)",
    _ENDED,
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
        _Finish(
            "finish",
            "repeat tool loop: the model is asked for its answer (finish)",
            # What an answer needs, not a description of the loop, which a small model says
            # back: measured on live models (the lab guide's table).
            "Reply to the user with the latest result of `{tool}`, as it is, and what is still "
            'unknown: "{result}"',
            refusal=(
                "Not run: you were asked for your answer, since `{tool}` was looping. Answer "
                "the user now with what you have found."
            ),
        ),
        _Error("error", "repeat tool loop stopped (error)", _ENDED),
        # Paused, not stopped: the human's answer decides, and is logged when it comes.
        _Interrupt(
            "interrupt", "repeat tool loop: a human is asked what to do (interrupt)", _ENDED
        ),
        _Block(
            "block",
            "repeat tool call refused",  # the model decides what comes next
            _ENDED,
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
