"""The HTML report of an audit: its content, and how it renders in a real browser."""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import messages_to_dict

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain.tooling import _report as report
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling._logs import LogReader
from repeat_reminder_langchain.tooling.audit import Auditor, TimelineCall
from repeat_reminder_langchain.tooling.demo import run_demo

UNGUARDED = messages_to_dict(run_demo(None))
STALE = messages_to_dict(run_demo(None, "stale"))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of three conversations, two of them flagged."""
    folder = tmp_path_factory.mktemp("report")
    log = folder / "runs.jsonl"
    records = [{"id": "poll", "messages": UNGUARDED}, {"id": "quiet", "messages": UNGUARDED[:3]}]
    records.append({"id": "stale <&>", "messages": STALE})
    log.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    path = folder / "report.html"
    assert main(["audit", str(log), "--detect", "repeat,stale", "--html", str(path)]) == 0
    return path


def test_the_report_holds_the_tables_and_each_flagged_conversation(page: Path) -> None:
    text = page.read_text(encoding="utf-8")

    assert text.startswith("<!DOCTYPE html>")
    assert "3 conversations · 26 tool calls · thresholds 3, 5, 8 · detect repeat, stale" in text
    assert text.count("<h3 ") == 2
    assert '<h3 id="c0">conversation 0 · id poll</h3>' in text
    assert '<h3 id="c2">conversation 2 · id stale &lt;&amp;&gt;</h3>' in text
    assert '<tr class="detailed"><td class="n">5</td>' in text
    assert '<tr class="gentle"><td class="n">5</td><td class="n">9</td><td>run_tests</td>' in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text  # nothing to fetch


def test_the_summary_is_tables_not_terminal_text(page: Path) -> None:
    text = page.read_text(encoding="utf-8")

    assert "<pre>" not in text
    for caption in (
        "Per tool",
        "Per detector",
        "Top 2 conversations by wasted calls",
        "Findings: the reminders the guard would have sent",
    ):
        assert f"<caption>{caption}</caption>" in text
    assert (
        '<tr><th>tool</th><th class="n">calls</th><th class="n">longest</th>'
        '<th class="n">streaks</th>'
    ) in text
    assert '<tr><td>job_status</td><td class="n">13</td><td class="n">12</td>' in text
    # A conversation in the tables links to its timeline below.
    assert '<td class="n"><a href="#c0">0</a></td><td>poll</td>' in text
    assert '<td class="n"><a href="#c2">2</a></td><td>stale &lt;&amp;&gt;</td>' in text
    assert "<p>wasted calls: 12 in 2 conversations · tokens spent on them: not recorded" in text


def test_each_timeline_is_an_accessible_inline_svg(page: Path) -> None:
    text = page.read_text(encoding="utf-8")

    assert text.count("<svg ") == 2
    assert "data:image" not in text and "<img" not in text
    assert '<svg xmlns="http://www.w3.org/2000/svg" role="img"' in text
    assert 'aria-labelledby="timeline-0-title timeline-0-desc"' in text
    assert '<title id="timeline-0-title">Timeline of conversation 0 · id poll</title>' in text
    assert (
        '<desc id="timeline-0-desc">Each call&#x27;s run of identical calls, in call order: '
        "13 calls · longest run 12 (job_status, call 12) · thresholds 3, 5, 8 · "
        "gentle at call 3; detailed at call 5; detailed at call 8; escalated at call 10.</desc>"
    ) in text  # the loop of 12 reaches the stop at 10 (escalate_after's default)
    assert "<title>call 5 · job_status · 5 in a row · detailed reminder (repeat)</title>" in text
    assert "<title>call 10 · job_status · 10 in a row · loop stopped (repeat)</title>" in text
    assert "<title>call 13 · read_log · 1 in a row</title>" in text
    assert "pale mark" not in text  # every call tracked


def test_the_report_needs_no_plotting_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    log = tmp_path / "run.json"
    log.write_text(json.dumps(UNGUARDED), encoding="utf-8")
    auditor = Auditor(ReminderConfig(exclude=["read_log"]), timelines=5)
    for conversation in LogReader().read([str(log)]):
        auditor.add(conversation)
    text = report.report_html(auditor.finish())

    assert "matplotlib" not in text
    assert text.count("<svg ") == 1
    assert "<td>read_log</td><td>untracked</td>" in text
    assert "<title>call 13 · read_log · untracked</title>" in text
    assert "<span>pale mark: untracked call</span>" in text


def test_a_timeline_shows_a_stopped_loop_and_labels_what_fits() -> None:
    def call(number: int, streak: int | None, level: str | None = None) -> TimelineCall:
        return TimelineCall(
            number, number, "ls", streak, "", level, level and "repeat", "{}", "", False
        )

    svg = report.timeline_svg([call(1, 1), call(2, 2, "gentle"), call(3, 3, "escalated")], [2])
    assert svg.count("<polygon ") == 1  # the reminder
    assert '<rect x="' in svg and 'width="10" height="10" fill="#6a1b9a"' in svg  # the stop
    assert "<title>call 3 · ls · 3 in a row · loop stopped (repeat)</title>" in svg
    assert "loop stopped</span>" in svg and "detailed reminder</span>" not in svg

    # A run far past the thresholds: 0 and the top of the scale are labelled; thresholds close
    # to 0 on that scale are drawn but not labelled over it.
    long = report.timeline_svg([call(n, n) for n in range(1, 301)], [3, 5, 8], key="long")
    assert re.findall(r'text-anchor="end">([^<]*)</text>', long) == ["0", "300", "call →"]
    assert long.count('stroke-dasharray="2 3"') == 3
    calls = re.findall(r'text-anchor="middle">([^<]*)</text>', long)
    assert calls[:4] == ["1", "10", "20", "30"] and calls[-1] == "300"
    assert 'width="1276"' in long  # 300 calls at 4 pixels each: it scrolls rather than shrinks

    assert "0 calls · thresholds 3 · no findings" in report.timeline_svg([], [3])


def test_a_report_with_nothing_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "quiet.json"
    log.write_text(json.dumps(UNGUARDED[:5]), encoding="utf-8")
    path = tmp_path / "report.html"

    assert main(["audit", str(log), "--html", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert "<p>no findings: the guard would not have stepped in.</p>" in text
    assert "Flagged conversations" not in text and "<caption>Per detector" not in text
    assert capsys.readouterr().err == f"HTML report: {path}\n"


def test_a_report_lists_what_it_skipped(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    log.write_text(json.dumps(UNGUARDED) + "\n{broken <\n", encoding="utf-8")
    path = tmp_path / "report.html"

    assert main(["audit", str(log), "--skip-bad", "--html", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert "1 unreadable skipped" in text
    assert f"<li><code>{log}:2:" in text


def test_a_report_says_how_many_flagged_conversations_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "SHOWN", 1)
    log = tmp_path / "runs.json"
    log.write_text(json.dumps([UNGUARDED, UNGUARDED[:13], UNGUARDED[:3]]), encoding="utf-8")
    path = tmp_path / "report.html"

    assert main(["audit", str(log), "--html", str(path), "--top", "1"]) == 0
    text = path.read_text(encoding="utf-8")
    assert "<caption>Top 1 conversation by wasted calls</caption>" in text
    assert text.count("<h3 ") == 1
    assert '<h3 id="c0">' in text  # the one with the most wasted calls
    assert "1 more flagged conversation not drawn." in text
    # Only a drawn conversation's number is a link.
    assert '<a href="#c0">' in text and '<a href="#c1">' not in text


# --- in a real browser ---------------------------------------------------------------------


class Browser:
    """Headless Chromium driven over the DevTools protocol, events collected as they come."""

    def __init__(self, executable: str, profile: Path) -> None:
        from websockets.sync.client import connect

        self.process = subprocess.Popen(
            [
                executable, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", f"--user-data-dir={profile}", "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(lines,), daemon=True).start()
        while True:
            line = lines.get(timeout=30)
            if line.startswith("DevTools listening on "):
                break
        self._stack = contextlib.ExitStack()
        address = line.removeprefix("DevTools listening on ").strip()
        self.socket = self._stack.enter_context(connect(address, max_size=None))
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def _pump(self, lines: queue.Queue[str]) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            lines.put(line)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            answer = json.loads(self.socket.recv(timeout=30))
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                result: dict[str, Any] = answer["result"]
                return result
            self.events.append(answer)

    def wait_for(self, method: str) -> None:
        while not any(event.get("method") == method for event in self.events):
            self.events.append(json.loads(self.socket.recv(timeout=30)))

    def open(self, url: str) -> str:
        """Open `url` in a new page, once loaded; the page's session."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = str(
            self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        )
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(f"{domain}.enable", session)
        self.events.clear()
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired")
        return session

    def problems(self, allowed: str) -> list[str]:
        """Console errors, uncaught exceptions, and requests for anything but `allowed`."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(f"console: {params['args'][0].get('value')}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']['text']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log: {params['entry']['text']}")
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if url != allowed and not url.startswith("data:"):
                    found.append(f"request: {url}")
        return found

    def evaluate(self, session: str, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", session, expression=expression, returnByValue=True)
        return answer["result"]["value"]

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the browser may go before it answers
            self.send("Browser.close")
        self._stack.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("Chromium not found: install Debian's chromium package (.ci/run does)")
    opened = Browser(executable, tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


def test_the_report_renders_in_chromium_without_errors(
    browser: Browser, page: Path, tmp_path: Path
) -> None:
    url = page.as_uri()
    session = browser.open(url)

    assert browser.problems(url) == []
    seen = browser.evaluate(
        session,
        "JSON.stringify({title: document.title, flagged: document.querySelectorAll('h3').length,"
        " images: document.images.length,"
        " rows: document.querySelectorAll('tr.gentle, tr.detailed').length,"
        " links: [...document.querySelectorAll('td a')].every("
        "   a => document.getElementById(a.hash.slice(1)) !== null)})",
    )
    assert json.loads(seen) == {
        "title": "repeat-reminder audit", "flagged": 2, "images": 0, "rows": 4, "links": True,
    }  # fmt: skip
    # Each timeline is drawn: the chart, each call's bar and each finding's marker take room
    # on the page, and the chart's name is what a screen reader announces.
    timelines = json.loads(
        browser.evaluate(
            session,
            "JSON.stringify([...document.querySelectorAll('figure svg')].map(svg => {"
            " const box = svg.getBoundingClientRect();"
            " const drawn = [...svg.querySelectorAll('rect, polygon')].map(s => s.getBBox());"
            " return {width: box.width, height: box.height, shapes: drawn.length,"
            "  empty: drawn.filter(b => b.width <= 0 || b.height <= 0).length,"
            "  name: document.getElementById(svg.getAttribute('aria-labelledby').split(' ')[0])"
            "   .textContent}; }))",
        )
    )
    assert [t["name"] for t in timelines] == [
        "Timeline of conversation 0 · id poll", "Timeline of conversation 2 · id stale <&>",
    ]  # fmt: skip
    for timeline in timelines:
        assert timeline["width"] > 200 and timeline["height"] > 150
        assert timeline["shapes"] > 10 and timeline["empty"] == 0
    browser.send("Emulation.setDeviceMetricsOverride", session, width=1100, height=800,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    shot = browser.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
    picture = tmp_path / "report.png"
    picture.write_bytes(base64.b64decode(shot["data"]))
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size > 10_000


def test_the_browser_check_catches_a_broken_page(browser: Browser, tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text(
        '<img src="http://127.0.0.1:9/missing.png"><script>console.error("boom"); nope();</script>',
        encoding="utf-8",
    )
    url = broken.as_uri()
    browser.open(url)

    found = browser.problems(url)
    assert "console: boom" in found
    assert "request: http://127.0.0.1:9/missing.png" in found
    assert any(problem.startswith("exception: Uncaught") for problem in found)
