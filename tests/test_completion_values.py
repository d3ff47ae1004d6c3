"""Completion after a `%gem open` flag that takes a value offers what that flag takes (a folder
for --state-dir DIR, a file for --fetch-fixtures FILE), not gem folders; the gem's path is still
found among the flags and their values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_completion import AGENT, NOTES, _shell, _texts


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """notes and agent (gems), states/ (a folder), fetch.json (a file)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(NOTES, tmp_path / "notes")
    shutil.copytree(AGENT, tmp_path / "agent")
    (tmp_path / "states").mkdir()
    (tmp_path / "fetch.json").write_text("[]")
    return tmp_path


def test_state_dir_value_offers_folders_not_gems(here: Path) -> None:
    assert _texts(_shell(), "%gem open --state-dir ") == (["agent/", "notes/", "states/"], 22)
    assert _texts(_shell(), "%gem open notes --state-dir st") == (["states/"], 28)


def test_a_flag_value_after_an_equals_sign(here: Path) -> None:
    assert _texts(_shell(), "%gem open notes --state-dir=st") == (["states/"], 28)


def test_a_file_flag_offers_files_and_folders(here: Path) -> None:
    assert _texts(_shell(), "%gem open --fetch-fixtures ") == (
        ["agent/", "notes/", "states/", "fetch.json"],
        27,
    )


def test_a_flag_of_words_offers_them_with_files(here: Path) -> None:
    matches, _ = _texts(_shell(), "%gem open notes --http ")
    assert matches == ["real", "agent/", "notes/", "states/", "fetch.json"]


def test_a_number_or_an_account_value_offers_nothing(here: Path) -> None:
    assert _texts(_shell(), "%gem open notes --timeout ") == ([], 26)
    assert _texts(_shell(), "%gem open notes --allow-account ") == ([], 32)


def test_the_gem_path_is_found_after_a_flags_value(here: Path) -> None:
    """`--state-dir states agent`: states is the flag's value, agent the gem (its flags)."""
    assert _texts(_shell(), "%gem open --state-dir states no") == (["notes"], 29)
    matches, _ = _texts(_shell(), "%gem open --state-dir states agent --allow")
    assert matches == ["--allow-recipient"]  # the agent gem's platform's, not the folder's


def test_a_flag_without_a_value_is_followed_by_the_gem(here: Path) -> None:
    assert _texts(_shell(), "%gem open --real no") == (["notes"], 17)
