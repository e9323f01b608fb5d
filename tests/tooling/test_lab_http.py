"""The loop lab over HTTP: an OpenAI-compatible model, against the validating test server."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langchain_openai")

from repeat_reminder_langchain.tooling._cli import main

from ..provider_server import ProviderServer, Script
from .test_lab import seen


def test_the_lab_runs_an_openai_compatible_model_over_http(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = Script.repeat("job_status", {"job": "nightly-build-7"}, 5, answer="Still running.")
    with ProviderServer(script) as server:
        argv = ["lab", "--model", "local", "--base-url", server.openai_base_url, "--tasks", "poll"]
        argv += ["--conditions", "none,guard", "--temperature", "0", "--output", str(tmp_path)]
        assert main(argv) == 0
        assert {exchange.status for exchange in server.exchanges} == {200}  # every request valid
    captured = capsys.readouterr()
    assert (
        "[2/2] poll · guard · run 1: 6 model calls, longest run 5, broken by detailed, "
        "acceptable\n" in captured.err
    )
    rows = [json.loads(line) for line in (tmp_path / "lab.jsonl").read_text().splitlines()]
    assert [(r["condition"], r["longest"], r["broke"], r["acceptable"]) for r in rows] == [
        ("none", 5, None, True),
        ("guard", 5, "detailed", True),  # this model does not heed: it answers when it would
    ]
    transcripts = sorted(p.name for p in (tmp_path / "transcripts").iterdir())
    assert transcripts == ["poll-guard-1.txt", "poll-none-1.txt"]
    assert "REMINDER" in (tmp_path / "transcripts" / "poll-guard-1.txt").read_text()
    assert captured.out.splitlines()[1].split()[:3] == ["poll", "none", "1"]


def test_a_model_that_never_stops_runs_through_the_lab_at_the_default_cap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The case the lab is for: the cap or the guard ends every run, never LangGraph's limit.
    seed = tmp_path / "seed.toml"  # 0.4.0's guard: advice only, no stop
    seed.write_text('profile = "seed"\n', encoding="utf-8")
    out = tmp_path / "out"
    script = Script.repeat("job_status", {"job": "nightly-build-7"}, 10_000)
    with ProviderServer(script) as server:
        argv = ["lab", "--model", "local", "--base-url", server.openai_base_url, "--tasks", "poll"]
        argv += ["--conditions", "none,guard,escalate,finish,neutral,config"]
        argv += ["--config", str(seed), "--output", str(out)]
        assert main([*argv, "--quiet"]) == 0
        assert {exchange.status for exchange in server.exchanges} == {200}
        # `finish`, and `guard` and `neutral` by the default stop (10, finish), sent their last
        # request with the tools, told to call none: this model answered.
        assert all("tools" in exchange.body for exchange in server.exchanges)
        assert [e.body.get("tool_choice") for e in server.exchanges].count("none") == 3
    records = [json.loads(line) for line in (out / "lab.jsonl").open()]
    held = [record["held_back"] for record in records]
    assert held == [None, "tool_choice_none", None, "tool_choice_none", "tool_choice_none", None]
    assert records[-1]["settings"] == {"profile": "seed"}
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:7]]
    assert [row[:7] for row in rows] == [
        ["poll", "none", "1", "24.0", "24.0", "limit", "1"],
        ["poll", "guard", "1", "11.0", "10.0", "escalated", "1"],  # the default stop
        ["poll", "escalate", "1", "10.0", "10.0", "escalated", "1"],
        ["poll", "finish", "1", "11.0", "10.0", "escalated", "1"],  # the 11th: its answer
        ["poll", "neutral", "1", "11.0", "10.0", "escalated", "1"],
        ["poll", "config", "1", "24.0", "24.0", "limit", "1"],  # seed: the cap ends it
    ]


def test_quiet_silences_the_guards_log_lines() -> None:
    # The real command, logging unconfigured: the guard's WARNING lines reach stderr.
    script = Script.repeat("job_status", {"job": "nightly-build-7"}, 10_000)
    with ProviderServer(script) as server:
        argv = ["lab", "--model", "local", "--base-url", server.openai_base_url, "--tasks", "poll"]
        argv += ["--conditions", "escalate"]
        command = [sys.executable, "-m", "repeat_reminder_langchain", *argv]
        loud = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        quiet = subprocess.run(
            [*command, "--quiet"], capture_output=True, text=True, timeout=60, check=False
        )
    assert "repeat tool loop stopped (end): job_status × 10" in loud.stderr
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert quiet.stdout.splitlines()[1].split()[:6] == [
        "poll",
        "escalate",
        "1",
        "10.0",
        "10.0",
        "escalated",
    ]


def test_at_a_terminal_each_model_call_is_counted_as_it_goes_out() -> None:
    # The real command with its stderr a terminal (a pseudo-terminal), the guard's log line
    # unconfigured, as a user runs it: a line says which call a run is at while it is out, and
    # what the run leaves is its lines, each on a clean line (issue 65, point 19).
    script = Script.repeat("job_status", {"job": "nightly-build-7"}, 10_000)
    with ProviderServer(script) as server:
        argv = ["lab", "--model", "local", "--base-url", server.openai_base_url, "--tasks", "poll"]
        argv += ["--conditions", "escalate"]
        screen, terminal = pty.openpty()
        child = subprocess.Popen(
            [sys.executable, "-m", "repeat_reminder_langchain", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
        os.close(terminal)
        written = b""
        try:
            while select.select([screen], [], [], 60)[0]:  # what the terminal is sent, to the end
                try:
                    chunk = os.read(screen, 4096)
                except OSError:  # EIO: the command closed the terminal
                    break
                if not chunk:
                    break
                written += chunk
            out = child.communicate(timeout=60)[0].decode()
        finally:
            os.close(screen)
            child.kill()
    text = written.decode()
    calls = [
        text.index(f"poll · escalate · run 1: model call {n} of at most 24") for n in range(1, 11)
    ]
    assert calls == sorted(calls)  # each call counted, in order
    assert child.returncode == 0
    rows = seen(text)
    assert rows[0].startswith("repeat tool loop stopped (end): job_status × 10 (end, ")
    assert rows[1:] == [
        "[1/1] poll · escalate · run 1: 10 model calls, longest run 10, broken by escalated, "
        "not acceptable",
        "",
    ]
    assert "\r" not in out and out.splitlines()[1].split()[:3] == ["poll", "escalate", "1"]


def test_a_server_that_cannot_be_reached_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port free a moment ago, which nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    assert main(["lab", "--model", "local", "--base-url", url, "--tasks", "poll", "--quiet"]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: poll · none · run 1: the model at {url} failed: OpenAIConnectionError: "
        "Connection error.\n",
    )


def test_an_anthropic_model_without_its_key_is_said_before_any_call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_anthropic")
    argv = ["lab", "--model", "anthropic:claude-haiku-4-5", "--tasks", "poll", "--conditions"]
    with ProviderServer(Script.repeat("job_status", {"job": "j"}, 2)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        assert main([*argv, "none"]) == 2
        assert not server.exchanges  # no request made
        assert capsys.readouterr().err.splitlines()[0] == (
            "error: --model anthropic:claude-haiku-4-5: no API key: set ANTHROPIC_API_KEY"
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # with it, the lab runs
        assert main([*argv, "none", "--quiet"]) == 0
        assert {exchange.status for exchange in server.exchanges} == {200}
    assert capsys.readouterr().out.splitlines()[1].split()[:3] == ["poll", "none", "1"]


# -- a lab stopped midway, for real -------------------------------------------------------------


@pytest.fixture
def held_lab(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """The lab's command, running three runs on the test server, whose first has ended: the
    second waits for a model that does not answer. Stopped by its pid at the end."""
    script = Script.repeat("job_status", {"job": "nightly-build-7"}, 2, answer="Still running.")
    with ProviderServer(script) as server:
        server.hold_after(3)  # the first run's 3 model calls
        argv = ["lab", "--model", "local", "--base-url", server.openai_base_url, "--tasks", "poll"]
        argv += ["--conditions", "none,guard,escalate", "--output", str(tmp_path)]
        lab = subprocess.Popen(
            [sys.executable, "-m", "repeat_reminder_langchain", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert lab.stderr is not None
            for line in lab.stderr:  # until the first run's line
                if line.startswith("[1/3] poll · none · run 1: "):
                    break
            else:
                raise AssertionError(f"the lab ended first (exit code {lab.wait()})")
            yield lab, tmp_path
        finally:
            if lab.poll() is None:
                os.kill(lab.pid, signal.SIGKILL)
            lab.communicate()


def test_a_lab_killed_midway_keeps_the_runs_done(
    held_lab: tuple[subprocess.Popen[str], Path],
) -> None:
    lab, output = held_lab
    os.kill(lab.pid, signal.SIGKILL)
    lab.wait()
    rows = [json.loads(line) for line in (output / "lab.jsonl").read_text().splitlines()]
    assert [(r["condition"], r["run"]) for r in rows] == [("none", 1)]
    assert (output / "transcripts" / "poll-none-1.txt").exists()


def test_ctrl_c_stops_the_lab_with_one_line_and_the_table_of_the_runs_done(
    held_lab: tuple[subprocess.Popen[str], Path],
) -> None:
    lab, output = held_lab
    os.kill(lab.pid, signal.SIGINT)
    out, err = lab.communicate()
    assert (lab.returncode, err) == (130, "interrupted\n")
    assert [line.split()[:3] for line in out.splitlines()[1:2]] == [["poll", "none", "1"]]
    assert len((output / "lab.jsonl").read_text().splitlines()) == 1
