"""Why each missed target is missed, said from the same run's figures.

`make bench` prints every row that misses its target with its reason, and `results.json` keeps
the reason beside the figure. The figures a reason quotes come from the same run, so it holds
on the machine that measured it; a reason whose figures the run did not measure (a section not
run) says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import cast

from .calls import STEPS
from .hooks import COUNTING, LAYERED, LONG, PARTS, PEERS, SHORT, _key
from .measure import Row

__all__ = ["reasons"]

Figures = Callable[[str], "float | None"]

UNMEASURED = "not explained by this run"
_SINGLE = f"hooks.{_key(LAYERED)}.before_model"
_PARTS = {_key(part): part for part, _, _, _ in PARTS}


def reasons(rows: Sequence[Row]) -> dict[str, str]:
    """The reason of every row that misses its target, by the row's key."""
    figure: Figures = {row.key: row.value for row in rows}.get
    return {row.key: _why(row, figure) for row in rows if not row.ok}


def _why(row: Row, figure: Figures) -> str:
    for pattern, explain in _RULES:
        match = re.fullmatch(pattern, row.key)
        if match is not None:
            return explain(row, figure, *match.groups()) or UNMEASURED
    return _within_spread(row) or UNMEASURED


def _layers(figure: Figures, size: str) -> str | None:
    """What the default guard's turn costs over its rules in one function, and where it goes."""
    single, counting = figure(f"{_SINGLE}.{size}"), figure(f"hooks.guard.{COUNTING}.{size}")
    if single is None or counting is None:
        return None
    parts = sorted(
        (
            (value, part)
            for key, part in _PARTS.items()
            if (value := figure(f"hooks.guard.part.{key}.{size}"))
        ),
        reverse=True,
    )
    largest = ", ".join(f"{part} {value:.1f}" for value, part in parts[:4])
    return (
        f"the contract's rules for a quiet turn, in one function ({LAYERED}), cost {single:.1f} "
        f"µs; the guard's {COUNTING}, which counts the turn, costs {counting:.1f}, "
        f"{counting / single:.1f} times them (its layers)"
        + (f"; the largest parts of a turn, in µs: {largest}" if largest else "")
    )


def _guard(row: Row, figure: Figures, name: str, size: str) -> str | None:
    if name == "guard":
        return _layers(figure, size)
    default = figure(f"hooks.guard.total.{size}")
    if default is None:
        return None
    more = row.value - default
    return f"{more:.1f} µs more than the defaults' {default:.1f}, for the detectors it adds"


def _peer(row: Row, figure: Figures, size: str) -> str | None:
    known = {peer: value for peer in PEERS if (value := figure(f"hooks.{_key(peer)}.total.{size}"))}
    single, layers = figure(f"{_SINGLE}.{size}"), _layers(figure, size)
    if not known or single is None or layers is None:
        return None
    peer = min(known, key=known.__getitem__)
    said = (
        f"the {LAYERED} alone costs {single / known[peer]:.2f} times {peer} "
        f"({known[peer]:.1f} µs): parity leaves {max(known[peer] - single, 0.0):.1f} µs for "
        f"every layer and the hooks the peer has not; {layers}"
    )
    calls = {name: figure(f"calls.hooks.{_key(name)}.{size}") for name in ("guard", peer, LAYERED)}
    if None in calls.values():
        return said
    return (
        f"{said}; counted, the guard's hooks run {calls['guard']:.0f} Python calls a turn, "
        f"{peer}'s {calls[peer]:.0f} and the {LAYERED}'s {calls[LAYERED]:.0f}"
    )


def _node(row: Row, figure: Figures, name: str, size: str) -> str | None:
    single, counting = figure(f"{_SINGLE}.{size}"), figure(f"hooks.guard.{COUNTING}.{size}")
    kept = figure(f"hooks.state_kept_node.{size}")
    if single is None or counting is None or kept is None:
        return None
    said = (
        f"the state-kept node counts a turn through the guard's layers, as the middleware's "
        f"{COUNTING} does ({counting / single:.1f} times the {LAYERED}, which costs "
        f"{single:.1f} µs), and costs {kept / single:.1f} times the {LAYERED}"
    )
    if name == "state_kept_node":
        return said
    return (
        f"{row.value - kept:.1f} µs more than the state-kept node's {kept:.1f}, following "
        f"every callback of the run to keep each agent's record; {said}"
    )


def _whole_run(row: Row, figure: Figures, prefix: str) -> str | None:
    added, turn = figure(f"{prefix}.guard_per_turn"), figure(f"{prefix}.noop_turn")
    if added is None or turn is None or row.target is None:
        return None
    said = (
        f"the guard adds {added:.1f} µs a turn to the no-op's {turn:.0f}, in runs whose model "
        f"and tool answer at once, where the target leaves {(row.target - 1) * turn:.1f}"
    )
    what, key = _ALONE[prefix]
    alone = figure(f"{key}.{SHORT}")
    if alone is not None:
        said = f"{said}; {what}, played alone, cost {alone:.1f} µs a turn"
    steps = [figure(f"calls.create_agent.{_key(step)}") for step in STEPS]
    if prefix != "overhead.create_agent" or None in steps:
        return said
    shape, field, write, guard = cast("list[float]", steps)
    return (
        f"{said}; counted, a turn of the guard runs {guard:.0f} Python calls more than a bare "
        f"agent's: {shape:.0f} to run hooks of its shape, {field - shape:.0f} for its state "
        f"field, {write - field:.0f} to apply a record written each turn, {guard - write:.0f} "
        "for its own work"
    )


# What the guard of each whole run is, and its figure a turn played alone (the hooks section).
_ALONE = {
    "overhead.graph": ("the handler and its node", "hooks.handler___node"),
    "overhead.create_agent": ("the middleware's hooks", "hooks.guard.total"),
}


def _within_spread(row: Row) -> str | None:
    if row.spread is None or row.target is None or row.value - row.spread > row.target:
        return None
    return (
        f"within the rounds' spread (± {row.spread:.3f}) of its target: the rounds disagree "
        "by more than it misses; rerun on a calm machine"
    )


def _flat(row: Row, figure: Figures, name: str, hook: str) -> str | None:
    within = _within_spread(row)
    plain = hook.removesuffix("__stored_reminders")
    stored = ".stored" if plain != hook else ""
    short = figure(f"hooks.{name}.{plain}.{SHORT}{stored}")
    long = figure(f"hooks.{name}.{plain}.{LONG}{stored}")
    if within is not None or short is None or long is None:
        return within
    return (
        f"{long - short:.2f} µs more at {LONG:,} messages ({long:.2f}) than at {SHORT} "
        f"({short:.2f}); what grows is not measured"
    )


_RULES: tuple[tuple[str, Callable[..., str | None]], ...] = (
    (r"hooks\.(guard|guard__every_detector)\.total\.(\d+)", _guard),
    (r"hooks\.guard\.over_cheapest_peer\.(\d+)", _peer),
    (r"hooks\.(handler___node|state_kept_node)\.(\d+)", _node),
    (r"hooks\.(\w+?)\.(\w+)\.flat", _flat),
    (r"(overhead\.graph|overhead\.create_agent)\.guard_vs_noop", _whole_run),
)
