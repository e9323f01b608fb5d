"""Settings in a file: `ReminderConfig.from_file` and `to_file`, TOML and JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import repeat_reminder_langchain
from repeat_reminder_langchain import ConfigError, ReminderConfig

TOML = """\
thresholds = [5, 2]
exclude = ["think", "todo_*"]
detect = ["repeat", "same_error"]
error_pattern = '^Error: "(.*)"'
escalate_after = 9

[ignore_arguments]
"run_*" = ["description", "options.timeout*"]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_toml_file_holds_the_fields_and_keywords_go_over_it(tmp_path: Path) -> None:
    path = write(tmp_path, "guard.toml", TOML)
    config = ReminderConfig.from_file(path, escalate_after=12)

    assert config == ReminderConfig(
        thresholds=[2, 5],
        exclude=["think", "todo_*"],
        detect=["repeat", "same_error"],
        error_pattern='^Error: "(.*)"',
        escalate_after=12,
        ignore_arguments={"run_*": ["description", "options.timeout*"]},
    )
    assert not config.tracks("todo_write")


def test_pyproject_holds_them_in_its_tool_table(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\n\n[tool.repeat-reminder]\nthresholds = [4]\n'
    assert ReminderConfig.from_file(write(tmp_path, "pyproject.toml", text)).thresholds == (4,)
    with pytest.raises(ConfigError, match=r"pyproject.toml: no \[tool.repeat-reminder\] table$"):
        ReminderConfig.from_file(write(tmp_path, "pyproject.toml", 'tool = "x"\n'))


@pytest.mark.parametrize("name", ["out.toml", "out.json"])
def test_what_to_file_writes_from_file_reads_back_the_same(tmp_path: Path, name: str) -> None:
    config = ReminderConfig.from_file(write(tmp_path, "in.toml", TOML), not_user="\\Anotice")
    config.to_file(tmp_path / name)

    assert ReminderConfig.from_file(tmp_path / name) == config  # the fields set, and only them
    assert ReminderConfig().model_fields_set == set()


@pytest.mark.parametrize("name", ["out.toml", "out.json"])
def test_a_written_file_holds_words_in_any_language_as_they_are_said(
    tmp_path: Path, name: str
) -> None:
    # A person reads and edits the file: text outside ASCII is written as it is, not escaped.
    said = "Du hast {tool} schon {count} Mal aufgerufen: überlege, was du änderst."
    config = ReminderConfig(words={"*": {"gentle": said}})
    config.to_file(tmp_path / name)

    assert said in (tmp_path / name).read_text(encoding="utf-8")
    assert ReminderConfig.from_file(tmp_path / name) == config


def test_a_json_file_says_null_where_toml_leaves_the_field_out(tmp_path: Path) -> None:
    config = ReminderConfig(repeat_every=None, thresholds=[3])
    config.to_file(tmp_path / "out.json")
    config.to_file(tmp_path / "out.toml")

    assert json.loads((tmp_path / "out.json").read_text()) == {
        "thresholds": [3],
        "repeat_every": None,
    }
    assert (tmp_path / "out.toml").read_text() == "thresholds = [3]\n"


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("a.toml", "threshold = [3]\n", "a.toml: unknown setting 'threshold'; did you mean"),
        ("a.toml", "thresholds = [1]\n", "a.toml: thresholds: invalid threshold 1"),
        ("a.toml", "thresholds = [3\n", "a.toml: not TOML: "),
        ("a.json", '{"thresholds": [3],\n "detect": }', "a.json:2:12: not JSON: Expecting value"),
        ("a.json", "[3]", "a.json: the settings must be a table of fields, got [3]"),
        ("a.yaml", "thresholds: [3]", "a.yaml: a settings file is .toml or .json"),
        ("a.toml", "\udcff", "a.toml: cannot be read"),
    ],
)
def test_a_file_that_is_wrong_says_where(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xff" if text == "\udcff" else text.encode())
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(path)
    assert str(caught.value).startswith(str(tmp_path / problem))


def test_every_problem_of_a_file_is_said_on_a_line_of_its_own_naming_the_file(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "a.toml", "thresholds = [1]\nrepeat_every = 0\n")
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(path)
    assert str(caught.value).splitlines() == [
        f"{path}: thresholds: invalid threshold 1 \u2014 every threshold must be an integer >= 2",
        f"{path}: repeat_every: must be an integer >= 1, or None, got 0",
    ]


def test_an_unknown_setting_like_no_field_is_refused_listing_the_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(write(tmp_path, "a.toml", "colour = 3\n"))
    assert str(caught.value).startswith(
        f"{tmp_path / 'a.toml'}: unknown setting 'colour'; fields are thresholds, "
    )


def test_a_missing_file_and_a_bad_keyword_are_said_as_theirs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be read: No such file or directory"):
        ReminderConfig.from_file(tmp_path / "none.toml")
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(tmp_path)
    assert str(caught.value) == f"{tmp_path}: a directory, not a settings file"
    path = write(tmp_path, "a.toml", "thresholds = [3]\n")
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(path, repeat_every=0)  # the keyword's, not the file's
    assert str(caught.value) == "repeat_every: must be an integer >= 1, or None, got 0"
    # A file wrong too: each problem is said as its own, the file's naming the file.
    wrong = write(tmp_path, "wrong.toml", "thresholds = [1]\n")
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(wrong, repeat_every=0)
    assert str(caught.value).splitlines() == [
        f"{wrong}: thresholds: invalid threshold 1 \u2014 every threshold must be an integer >= 2",
        "repeat_every: must be an integer >= 1, or None, got 0",
    ]
    with pytest.raises(TypeError, match="unknown ReminderConfig field 'repeats'"):
        ReminderConfig.from_file(path, repeats=2)


def test_a_conflict_a_keyword_makes_with_a_valid_file_names_the_keyword(tmp_path: Path) -> None:
    path = write(tmp_path, "words.toml", "escalate_after = 5\nthresholds = [3]\n")
    assert ReminderConfig.from_file(path).escalate_after == 5  # valid alone
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(path, thresholds=[2, 7])
    assert str(caught.value) == (
        "escalate_after: must be greater than every threshold of the repeat detector (the last "
        "is 7), got 5; pass thresholds=[2] (reminders before the stop) or escalate_after \u2265 8 "
        f"(from the keyword thresholds: {path} alone is valid)"
    )
    with pytest.raises(ConfigError, match=r"\(from the keywords detect, stale_thresholds: "):
        ReminderConfig.from_file(path, detect=["stale"], stale_thresholds=[6])
    # A file that is wrong alone is still named as the source.
    wrong = write(tmp_path, "wrong.toml", "escalate_after = 5\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(wrong))}: escalate_after: must be"):
        ReminderConfig.from_file(wrong, repeat_every=2)


def test_a_file_is_read_as_utf_8_whatever_the_locale(tmp_path: Path) -> None:
    # A file is written in UTF-8 (to_file writes it so): a machine whose locale says another
    # encoding (a C locale, a Windows code page) reads the same names from it.
    path = write(tmp_path, "a.toml", 'exclude = ["caf\u00e9_*"]\n')
    assert ReminderConfig.from_file(path).exclude == ("caf\u00e9_*",)
    here = str(Path(repeat_reminder_langchain.__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _EXCLUDED, str(path)],
        env={
            **os.environ,
            "LC_ALL": "C",  # not coerced to UTF-8, nor read in UTF-8 mode: ASCII
            "PYTHONCOERCECLOCALE": "0",
            "PYTHONUTF8": "0",
            "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.stdout, done.returncode) == ("('caf\\xe9_*',)\n", 0), done.stderr


_EXCLUDED = """\
import sys
from repeat_reminder_langchain import ReminderConfig

print(ascii(ReminderConfig.from_file(sys.argv[1]).exclude))
"""


def test_what_a_file_cannot_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not_user: a function cannot be written"):
        ReminderConfig(not_user=lambda text: True).to_file(tmp_path / "a.toml")
    with pytest.raises(ConfigError, match=r"a settings file is \.toml or \.json"):
        ReminderConfig().to_file(tmp_path / "a.ini")


@pytest.mark.parametrize(
    ("fields", "takes"),
    [
        ({"not_user": lambda text: True}, "not_user: {} only a pattern"),
        ({"words": {"repeat": {"gentle": lambda r: "stop"}}}, "words: {} only format strings"),
        ({"normalise_results": lambda text: text}, "normalise_results: {} only True or False"),
    ],
)
def test_a_function_a_file_cannot_hold_is_named_with_what_the_file_takes(
    tmp_path: Path, fields: dict[str, Any], takes: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        ReminderConfig(**fields).to_file(tmp_path / "a.toml")
    assert str(refused.value) == takes.format("a function cannot be written to a file,")
    assert not (tmp_path / "a.toml").exists()


def test_a_written_file_is_laid_out_to_be_read(tmp_path: Path) -> None:
    # Indented JSON; a TOML table of words under its detector, with no empty table above it;
    # a file with nothing to set says so.
    ReminderConfig(thresholds=[2, 4]).to_file(tmp_path / "a.json")
    assert (tmp_path / "a.json").read_text() == '{\n  "thresholds": [\n    2,\n    4\n  ]\n}\n'
    ReminderConfig(words={"repeat": {"gentle": "stop {tool}"}}).to_file(tmp_path / "a.toml")
    assert (tmp_path / "a.toml").read_text() == '[words."repeat"]\n"gentle" = "stop {tool}"\n'
    ReminderConfig().to_file(tmp_path / "b.toml")
    assert (tmp_path / "b.toml").read_text() == "# The defaults fit: no setting to change.\n"
    ReminderConfig(words={}).to_file(tmp_path / "c.toml")  # set, to nothing: an empty table
    assert (tmp_path / "c.toml").read_text() == "[words]\n"
