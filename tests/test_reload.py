"""The edit loop (issue 13 item 5): an open bench notices an edited definition and loads it
again before the next call; one that no longer loads fails that call with its E_MANIFEST."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE_GEM

import workbench


def touch_later(path: Path, seconds: int) -> None:
    t = time.time_ns() + seconds * 10**9
    os.utime(path, ns=(t, t))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE_GEM, tmp_path / "notes"))


def edit(root: Path, fn: Callable[[dict], None], seconds: int = 1) -> None:
    path = root / "manifest.json"
    m = json.loads(path.read_text())
    fn(m)
    path.write_text(json.dumps(m))
    touch_later(path, seconds)


def test_an_edited_manifest_is_reloaded_before_the_next_call(notes: Path, opened: Callable) -> None:
    bench = opened(notes)
    assert bench.call("add_note", {"title": "a"}).ok
    edit(notes, lambda m: m["tools"][0].update(description="edited"))
    assert bench.call("add_note", {"title": "b"}).ok
    assert bench.manifest.tools["add_note"].description == "edited"


def test_a_manifest_that_no_longer_loads_fails_the_call_and_says_where(notes: Path, opened: Callable) -> None:
    bench = opened(notes)
    edit(notes, lambda m: m["tools"][0].update(sideEffect="sometimes"))
    res = bench.call("add_note", {"title": "a"})
    assert res.error is not None and res.error.code == "E_MANIFEST"
    assert "definition changed" in res.error.message and res.error.details["pointer"] == "/tools/0/sideEffect"
    with pytest.raises(workbench.GemLoadError):
        bench.reload()
    edit(notes, lambda m: m["tools"][0].update(sideEffect="write"), seconds=2)
    assert bench.call("add_note", {"title": "a"}).ok  # fixed: loads again


@pytest.mark.deno
def test_an_edited_integration_is_described_again(tmp_path: Path, opened: Callable) -> None:
    root = Path(shutil.copytree(EXAMPLE_GEM.parent / "acme-payments", tmp_path / "acme"))
    bench = opened(root)
    module = root / "integration.ts"
    module.write_text(module.read_text().replace("name: 'check_url'", "name: 'check_link'"))
    touch_later(module, 1)
    bench.reload()
    assert "check_link" in bench.manifest.tools and "check_url" not in bench.manifest.tools
