"""`same_output`: one tool returning one output again and again, to calls with new arguments.

An agent writes the same experiment under a new file name and runs it, or runs a script with
another flag, and gets back the very output it got before: the change did not reach what the
output shows. No call repeats; the output does. Opt-in, and it reports without reminding unless
asked (`remind`): a check that passes after each of several fixes returns one output too (on
the labelled corpus, 4 of 28 such outputs were loops).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, StrictBool

from ._detector import Detector, Seen, Settings, Words

MIN_OUTPUT = 50
"""The fewest characters (stripped) of an output it counts: an empty or one-word result
(`[]`, `ok`, an exit code alone) comes back from any number of different calls."""

OUTPUTS = 16
"""How many outputs an agent's `same_output` remembers; the least recent goes first."""

_VARIANTS = 16  # argument sets remembered for one output, to say how many there were


def _output(entry: list[Any]) -> list[Any]:
    """A remembered output, checked: `[calls, argument sets]`."""
    if not (
        len(entry) == 2
        and type(entry[0]) is int
        and entry[0] > 0
        and type(entry[1]) is list
        and all(type(item) is str for item in entry[1])
    ):
        raise ValueError("an output must be [calls, argument sets]")
    return entry


@dataclass(slots=True)
class _Outputs:
    """The outputs remembered, oldest first: each `[calls, argument sets]` by tool and output."""

    outputs: dict[str, Annotated[list[Any], AfterValidator(_output)]] = field(default_factory=dict)
    text: str = field(default="", init=False)  # the output of the call seen last
    variants: int = field(default=0, init=False)  # how many argument sets returned it


class _Settings(Settings):
    # It reports unless asked to remind: on a coding agent most of its flags are checks that
    # rightly print the same output again (of 16 on the labelled corpus, 4 loops).
    remind: StrictBool = False


class SameOutput(Detector):
    """Counts the calls of one tool that returned one output, once two argument sets did.

    An output shorter than `MIN_OUTPUT` characters, or a failure (`same_error`'s), is not
    counted; the same arguments returning it alone are `repeat`'s and `stale`'s.
    """

    name = "same_output"
    settings = _Settings
    says: ClassVar[Mapping[str, Any]] = {"evidence": "the output", "variants": 2}
    counts = "calls of one tool returning one output"
    memory = _Outputs
    words = Words(
        gentle=(
            "`{tool}` has now returned this same output {count} times, to {variants} different "
            "sets of arguments:\n{evidence}\n"
            "What you changed between the calls does not reach what this output shows. Find "
            "out why before another variation, try a different approach, or finish with what "
            "you have."
        ),
        detailed=(
            "Repeated tool output detected.\n"
            "- tool: {tool}\n"
            "- calls_with_this_output: {count}\n"
            "- argument_sets: {variants}\n"
            "- output: {evidence}\n"
            "Every one of these calls returned exactly this output, whatever the arguments. "
            "Do not make another variation of the same call: check that the change reaches "
            "what runs, use another approach, or report what you found."
        ),
        stopped="calls with new arguments returning the same output",
    )

    def see(self, memory: _Outputs, seen: Seen) -> int | None:
        text = seen.text
        if seen.failed or len(text) < MIN_OUTPUT or len(text.strip()) < MIN_OUTPUT:
            return None  # a failure is same_error's; a short output says too little
        output = f"{seen.tool}\x00{seen.outcome[:16]}"
        calls, variants = memory.outputs.pop(output, (0, []))
        short = seen.key[:8]
        if short not in variants and len(variants) < _VARIANTS:
            variants = [*variants, short]
        memory.outputs[output] = [calls + 1, variants]
        if len(memory.outputs) > OUTPUTS:
            del memory.outputs[next(iter(memory.outputs))]
        if len(variants) < 2:  # one argument set: the same call again
            return None
        memory.text, memory.variants = seen.text, len(variants)
        return calls + 1

    def details(self, memory: _Outputs, cut: Callable[[str], str]) -> Mapping[str, Any]:
        return {"evidence": cut(memory.text), "variants": memory.variants}
