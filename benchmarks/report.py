"""The machine a run happened on, the printed table, and `results.json`."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from .measure import Row

__all__ = ["load", "machine", "missed", "table", "write_json"]

PACKAGES = ("langchain-core", "langgraph", "langchain", "repeat-reminder-langchain")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> str:
    """One line naming the CPU, core count, Python and the library versions."""
    versions = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    return (
        f"{_cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()} "
        f"({platform.system()}); {versions}"
    )


def _figure(value: float, unit: str) -> str:
    if unit == "ratio":
        return f"{value:.3f}×"
    if unit == "bytes":
        return f"{value:,.0f} B"
    if unit == "mb/s":
        return f"{value:,.1f} MB/s"
    if unit == "mb/mb":
        return f"{value:,.2f} MB per MB"
    if unit == "mb":
        return f"{value:,.0f} MB" if value >= 10 else f"{value:,.1f} MB"
    if unit == "mb/1000":
        return f"{value:,.2f} MB per 1,000 threads"
    if unit == "threads/s":
        return f"{value:,.0f} threads/s"
    if unit == "calls":
        return f"{value:,.1f} calls"
    if unit == "us/message":  # a few hundredths of a µs: shown to the thousandth
        return f"{value:,.3f} µs a message"
    return f"{value:,.1f} µs"


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table: benchmark, value (± spread of the rounds), target, ok."""
    lines = ["| Benchmark | Value | Target | OK |", "| --- | ---: | ---: | :-: |"]
    for row in rows:
        value = _figure(row.value, row.unit)
        if row.spread is not None:
            value += f" ± {row.spread:.3f}"
        target = "—" if row.target is None else f"≤ {_figure(row.target, row.unit)}"
        ok = "—" if row.target is None else ("yes" if row.ok else "**NO**")
        lines.append(f"| {row.label} | {value} | {target} | {ok} |")
    return "\n".join(lines)


def load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, where the system tells them."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def missed(rows: Sequence[Row], why: Mapping[str, str]) -> str:
    """Each row that misses its target, with the figure, the target and the reason."""
    return "\n".join(
        f"- {row.label}: {_figure(row.value, row.unit)}, to {_figure(row.target, row.unit)}: "
        f"{why[row.key]}."
        for row in rows
        if row.target is not None and not row.ok
    )


def write_json(rows: Sequence[Row], path: Path, why: Mapping[str, str]) -> None:
    """Write `{"name": {"value": ..., "target": ..., "ok": ...}}` for every row.

    A row that misses its target also has `"why"`, its reason (`missed.reasons`).
    """
    results = {
        row.key: {
            "value": round(row.value, 4) if row.unit != "bytes" else int(row.value),
            "target": row.target,
            "ok": row.ok,
            **({"why": why[row.key]} if row.key in why else {}),
        }
        for row in rows
    }
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
