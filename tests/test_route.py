"""The route of one middleware turn: down once through the step, back once through reporting.

A structural test, not a timing: `benchmarks.route` profiles the calls (see CONTRIBUTING).
"""

from __future__ import annotations

from benchmarks.route import Entry, route, turns


def test_a_turn_with_nothing_due_enters_eight_modules_each_once() -> None:
    played = turns()
    assert route(played["nothing due"]) == [
        Entry("(the agent)", "_middleware"),
        Entry("_middleware._turn", "_guard"),
        Entry("_guard.read", "_conversation"),
        Entry("_guard._step", "_counter"),
        Entry("_counter._calls", "_arguments"),  # each call read as its tool reads it
        Entry("_counter._calls", "_canonical"),
        Entry("_counter._calls", "_record"),
        Entry("_guard._step", "_stats"),  # nothing to report: `_events` is not entered
    ]


def test_a_turn_that_draws_a_reminder_goes_down_once_and_comes_back_once() -> None:
    played = turns()
    played["nothing due"]()
    entries = route(played["a reminder"])

    modules = {entry.module for entry in entries}
    assert len(modules) <= 12
    # The face enters the step once, reporting once, and the rendering of the model's request
    # once (the reminder in the form the request's model takes); nothing enters the face.
    face = [entry.module for entry in entries if entry.caller.startswith("_middleware.")]
    assert face == ["_guard", "_events", "_messages"]
    assert [entry for entry in entries if entry.module == "_middleware"] == entries[:1]
    # Each module is entered from one other, but `reminder`, whose values the counter builds
    # and the messages render, `record`, which the counter advances and the guard notes what
    # it asked in, and the two the request's rendering reads again: `messages`, which made the
    # reminder, and `conversation`, which found the turn; no module calls back into one above.
    callers: dict[str, set[str]] = {}
    for entry in entries[1:]:
        callers.setdefault(entry.module, set()).add(entry.caller.rpartition(".")[0])
    assert {module for module, above in callers.items() if len(above) > 1} == {
        "_reminder",
        "_record",
        "_messages",
        "_conversation",
    }
    assert len(entries) == len(modules) + 4
    edges = {(caller, module) for module, above in callers.items() for caller in above}
    assert not {(module, caller) for caller, module in edges} & edges
