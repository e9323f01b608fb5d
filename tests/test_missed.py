"""`make bench` says why each target it misses is missed, from the same run's figures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

# The benchmarks run the peers (the `bench` extra): `make test-lowest` runs without them.
pytest.importorskip("able_harness_kit")
pytest.importorskip("langchain_tool_recover")

from benchmarks.measure import Row, Samples
from benchmarks.missed import UNMEASURED, reasons
from benchmarks.overhead import TURNS, _rows
from benchmarks.report import missed, write_json

# A run's figures, as its hooks section writes them (µs a turn, at 20 messages).
RUN = [
    Row("hooks.single_pass.before_model.20", "single pass", 4.0, "us"),
    Row("hooks.guard.wrap_model_call.20", "guard: wrap_model_call", 12.0, "us"),
    Row("hooks.guard.part.counting.20", "counting", 5.0, "us"),
    Row("hooks.guard.part.reading_the_turn.20", "reading the turn", 3.0, "us"),
    Row("hooks.loopguardmiddleware.total.20", "LoopGuardMiddleware", 5.0, "us"),
    Row("hooks.toolrecovermiddleware.total.20", "ToolRecoverMiddleware", 7.0, "us"),
    Row("hooks.guard.total.20", "guard: all hooks", 14.0, "us", 6.0),
    Row("hooks.guard.over_cheapest_peer.20", "guard / the cheapest peer", 2.8, "ratio", 1.0),
    Row("hooks.state_kept_node.20", "state-kept node", 9.0, "us", 8.0),
    Row("hooks.handler___node.20", "handler + node", 22.0, "us", 8.0),
    # As its calls section counts them (Python calls a turn).
    Row("calls.hooks.guard.20", "guard", 40.0, "calls"),
    Row("calls.hooks.loopguardmiddleware.20", "LoopGuardMiddleware", 10.0, "calls"),
    Row("calls.hooks.single_pass.20", "single pass", 2.0, "calls"),
    Row("calls.create_agent.a_no_op_of_the_guard_s_shape", "shape", 80.0, "calls"),
    Row("calls.create_agent.and_its_state_field", "field", 131.0, "calls"),
    Row("calls.create_agent.and_a_record_written_each_turn", "write", 145.0, "calls"),
    Row("calls.create_agent.guard", "guard", 183.0, "calls"),
]


def test_a_missed_per_turn_target_says_what_the_rules_and_the_layers_cost_in_that_run() -> None:
    why = reasons(RUN)

    assert set(why) == {
        "hooks.guard.total.20",
        "hooks.guard.over_cheapest_peer.20",
        "hooks.state_kept_node.20",
        "hooks.handler___node.20",
    }
    guard = why["hooks.guard.total.20"]
    assert "in one function (single pass), cost 4.0 µs" in guard
    assert "wrap_model_call, which counts the turn, costs 12.0, 3.0 times them" in guard
    assert "the largest parts of a turn, in µs: counting 5.0, reading the turn 3.0" in guard
    peer = why["hooks.guard.over_cheapest_peer.20"]
    assert peer.startswith("the single pass alone costs 0.80 times LoopGuardMiddleware (5.0 µs)")
    assert "parity leaves 1.0 µs for every layer" in peer
    assert "costs 2.2 times the single pass" in why["hooks.state_kept_node.20"]
    assert why["hooks.handler___node.20"].startswith("13.0 µs more than the state-kept node's 9.0")


def test_with_the_calls_counted_the_reasons_say_in_which_layer_a_turn_goes() -> None:
    seconds = {"guard": [0.0530, 0.0540, 0.0535], "noop": [0.0500] * 3, "bare": [0.0450] * 3}
    whole = _rows("overhead.create_agent", "create_agent", Samples(seconds))

    why = reasons([*RUN, *whole])

    assert why["hooks.guard.over_cheapest_peer.20"].endswith(
        "; counted, the guard's hooks run 40 Python calls a turn, LoopGuardMiddleware's 10 and "
        "the single pass's 2"
    )
    assert why["overhead.create_agent.guard_vs_noop"].endswith(
        "; counted, a turn of the guard runs 183 Python calls more than a bare agent's: 80 to run "
        "hooks of its shape, 51 for its state field, 14 to apply a record written each turn, 38 "
        "for its own work"
    )


def test_a_reason_whose_figures_the_run_did_not_measure_says_so() -> None:
    alone = [Row("hooks.guard.total.20", "guard: all hooks", 14.0, "us", 6.0)]
    unknown = [Row("memory.checkpoint_1mb_args", "state", 3000, "bytes", 2048)]

    assert reasons(alone) == {"hooks.guard.total.20": UNMEASURED}
    assert reasons(unknown) == {"memory.checkpoint_1mb_args": UNMEASURED}


def test_a_flat_ratio_missed_within_its_spread_asks_for_a_calm_machine_else_says_the_growth() -> (
    None
):
    sizes = [
        Row("hooks.guard.wrap_model_call.20.stored", "20", 1.0, "us"),
        Row("hooks.guard.wrap_model_call.2000.stored", "2000", 1.1, "us"),
    ]
    noisy = Row(
        "hooks.guard.wrap_model_call__stored_reminders.flat", "flat", 1.06, "ratio", 1.05, 0.02
    )
    grown = replace(noisy, value=1.1, spread=0.01)

    assert "rerun on a calm machine" in reasons([*sizes, noisy])[noisy.key]
    assert reasons([*sizes, grown])[grown.key] == (
        "0.10 µs more at 2,000 messages (1.10) than at 20 (1.00); what grows is not measured"
    )


def test_a_whole_run_over_its_target_says_what_the_guard_adds_to_a_turn_of_that_run() -> None:
    seconds = {"guard": [0.0530, 0.0540, 0.0535], "noop": [0.0500] * 3, "bare": [0.0450] * 3}
    rows = _rows("overhead.create_agent", "create_agent", Samples(seconds))
    figures = {row.key: row.value for row in rows}

    assert round(figures["overhead.create_agent.noop_turn"], 6) == round(0.05 / TURNS * 1e6, 6)
    assert round(figures["overhead.create_agent.guard_per_turn"], 6) == round(
        0.0035 / TURNS * 1e6, 6
    )
    why = reasons(rows)["overhead.create_agent.guard_vs_noop"]
    assert why == (
        "the guard adds 17.5 µs a turn to the no-op's 250, in runs whose model and tool "
        "answer at once, where the target leaves 12.5"
    )


def test_the_printed_list_and_results_json_carry_each_missed_targets_reason(
    tmp_path: Path,
) -> None:
    why = reasons(RUN)
    path = tmp_path / "results.json"

    write_json(RUN, path, why)

    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["hooks.guard.total.20"]["why"] == why["hooks.guard.total.20"]
    assert "why" not in written["hooks.single_pass.before_model.20"]
    lines = missed(RUN, why).splitlines()
    assert len(lines) == len(why)
    assert lines[0].startswith("- guard: all hooks: 14.0 µs, to 6.0 µs: the contract's rules")
