"""A file the user names is never lost: written beside it, renamed over it once complete."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._files import Beside, same_file


def _beside(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".partial"))


def test_the_new_text_replaces_the_file_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("mine", encoding="utf-8")
    path.chmod(0o640)
    written = Beside(path)
    assert path.read_text(encoding="utf-8") == "mine"  # nothing touched until the commit
    assert len(_beside(tmp_path)) == 1
    written.commit("new")
    assert path.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert _beside(tmp_path) == []


def test_a_failure_before_the_commit_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "guard.toml"
    path.write_text("thresholds = [4]\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt), Beside(path):
        raise KeyboardInterrupt
    assert path.read_text(encoding="utf-8") == "thresholds = [4]\n"
    assert _beside(tmp_path) == []
    with Beside(path) as written:  # left without a failure: the file beside stays for commit
        pass
    written.discard()
    written.discard()  # twice: nothing there, nothing said
    assert _beside(tmp_path) == []


def test_a_commit_that_cannot_rename_removes_what_it_wrote(tmp_path: Path) -> None:
    folder = tmp_path / "taken"
    (folder / "inside").mkdir(parents=True)
    written = Beside(folder)
    with pytest.raises(IsADirectoryError):
        written.commit("text")  # a file cannot take a directory's place
    assert _beside(tmp_path) == [] and (folder / "inside").is_dir()


def test_a_folder_that_cannot_take_a_file_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Beside(tmp_path / "no such folder" / "report.html")


def test_two_names_of_one_file_are_one_file(tmp_path: Path) -> None:
    real = tmp_path / "in.json"
    real.write_text("[]", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    hard = tmp_path / "hard.json"
    os.link(real, hard)
    assert same_file(real, tmp_path / "." / "in.json")
    assert same_file(real, link) and same_file(hard, real)
    assert not same_file(real, tmp_path / "new.json")  # not there yet: another path
    assert same_file(tmp_path / "new.json", tmp_path / "sub" / ".." / "new.json")


def test_settings_written_over_a_file_replace_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "guard.toml"
    path.write_text("thresholds = [4]\n", encoding="utf-8")
    ReminderConfig(thresholds=[2]).to_file(path)
    assert ReminderConfig.from_file(path) == ReminderConfig(thresholds=[2])
    assert _beside(tmp_path) == []


def test_a_none_toml_cannot_hold_is_refused_not_lost(tmp_path: Path) -> None:
    # Left out of TOML, escalate_after=None would read back as the default stop at 10.
    with pytest.raises(ConfigError, match="escalate_after: None cannot be written to TOML"):
        ReminderConfig(escalate_after=None).to_file(tmp_path / "guard.toml")
    assert not (tmp_path / "guard.toml").exists()
    ReminderConfig(escalate_after=None).to_file(tmp_path / "guard.json")
    assert ReminderConfig.from_file(tmp_path / "guard.json").escalate_after is None
    seed = ReminderConfig(profile="seed", escalate_after=None)  # None is the seed's own
    seed.to_file(tmp_path / "seed.toml")
    assert ReminderConfig.from_file(tmp_path / "seed.toml") == ReminderConfig(profile="seed")
