"""The edit loop (issue 13 item 5): an open bench notices an edited definition and loads it
again before the next call; one that no longer loads fails that call with its E_MANIFEST."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


# -- SEC5 on the edit loop: a gem file swapped for a FIFO never blocks a call ----------------
class Unblocker:
    """While a call runs, opens each FIFO for writing whenever a reader waits on it (which
    frees that reader with an empty file) and counts it: a call that never blocks on a FIFO
    leaves `waited` at 0, whatever the machine's speed."""

    def __init__(self, *fifos: Path) -> None:
        import threading

        self.fifos, self.waited, self.stop = fifos, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            for f in self.fifos:
                try:  # ENXIO unless a reader has it open
                    os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
                    self.waited += 1
                except OSError:
                    pass
            self.stop.wait(0.02)

    def __enter__(self) -> Unblocker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def swap_for_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)
    touch_later(path, 2)  # an edit the mtime check sees, however coarse the clock


SOURCES = {
    "py": "def handle(input, ctx):\n    return {'v': 1}\n",
    "js": "export async function handle(input, ctx) { return { v: 1 }; }\n",
}
LANGS = [pytest.param("py", id="python"), pytest.param("js", id="js", marks=pytest.mark.deno)]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("platform", ["notochord", "agent"])
def test_SEC5_a_tool_file_swapped_for_a_fifo_fails_the_call_without_blocking(
    gem: Any, opened: Callable, lang: str, platform: str
) -> None:
    gem.tool("t", SOURCES[lang], ext=lang)
    if platform == "agent":
        gem.as_agent()
    bench = opened(gem)
    assert bench.call("t").value == {"v": 1}
    tool = gem.root / "tools" / f"t.{lang}"
    swap_for_fifo(tool)
    with Unblocker(tool) as watch:
        res = bench.call("t")
    assert watch.waited == 0  # before: the import opened the FIFO and waited for a writer
    assert res.error is not None and res.error.code == "E_MANIFEST", res.error
    assert f"tools/t.{lang}" in res.error.message and "FIFO" in res.error.message
    assert res.error.details["pointer"] == "/tools/0/file"
    tool.unlink()
    tool.write_text(SOURCES[lang].replace("1", "2"))
    touch_later(tool, 3)
    assert bench.call("t").value == {"v": 2}  # the edit loop goes on once it is a file again


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_a_fifo_swapped_in_after_the_check_is_refused_where_the_tool_is_read(
    gem: Any, opened: Callable, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the file was regular when the bench checked it, a FIFO when the runner reads
    it (Python's import; an agent JS tool's entry module, generated from its source)."""
    gem.tool("t", SOURCES[lang].replace("export ", ""), ext=lang)
    gem.as_agent()
    bench = opened(gem)
    assert bench.call("t").value == {"v": 1}
    monkeypatch.setattr("workbench.bench.pipeline.tool_file_error", lambda manifest, tool: None)
    tool = gem.root / "tools" / f"t.{lang}"
    swap_for_fifo(tool)
    with Unblocker(tool) as watch:
        res = bench.call("t")
    assert watch.waited == 0
    assert res.error is not None and res.error.code == "E_MANIFEST", res.error
    assert f"t.{lang}" in res.error.message and "FIFO" in res.error.message


@pytest.mark.parametrize("name", ["manifest.json", "db/schema.sql"])
def test_SEC5_a_definition_file_swapped_for_a_fifo_fails_the_call_without_blocking(
    gem: Any, opened: Callable, name: str
) -> None:
    gem.tool("t", SOURCES["py"]).schema_sql("CREATE TABLE IF NOT EXISTS t (x);")
    bench = opened(gem)
    assert bench.call("t").ok
    path = gem.root / name
    swap_for_fifo(path)
    with Unblocker(path) as watch:
        res = bench.call("t")
    assert watch.waited == 0
    assert res.error is not None and res.error.code == "E_MANIFEST"
    assert Path(name).name in res.error.message and "FIFO" in res.error.message


@pytest.mark.deno
def test_SEC5_an_integration_module_swapped_for_a_fifo_fails_the_call_without_blocking(
    tmp_path: Path, opened: Callable
) -> None:
    root = tmp_path / "integ"
    root.mkdir()
    module = root / "integration.ts"
    module.write_text(
        "import { defineIntegration } from '@ekanos/sdk';\n"
        "export default defineIntegration({ slug: 'demo', egress: ['api.demo.example'], tools: [\n"
        "  { name: 'a', description: 'd', parameters: { type: 'object', properties: {} },\n"
        "    outputExample: { ok: true }, async run(ctx, args) { return { ok: true }; } }] });\n"
    )
    bench = opened(root)
    assert bench.call("a").ok
    swap_for_fifo(module)
    with Unblocker(module) as watch:
        res = bench.call("a")
    assert watch.waited == 0  # before: Deno's import of the module waited until its timeout
    assert res.error is not None and res.error.code == "E_MANIFEST"
    assert "integration.ts" in res.error.message and "FIFO" in res.error.message


@pytest.mark.deno
def test_SEC5_a_js_tool_swapped_for_a_fifo_after_its_call_does_not_block_the_error_hint(
    gem: Any, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JS tool's TypeError on an ungranted capability gets a hint from its source, read
    after the call: a tool file swapped for a FIFO in between made that read wait for a
    writer (builtins.open). It is read non-blocking now: no hint, no wait."""
    gem.tool("t", "export async function handle(input, ctx) { return ctx.email.listSince({}); }\n", ext="js")
    bench = opened(gem)
    first = bench.call("t")
    assert first.error is not None and "ctx.email is undefined" in first.error.message, first.error
    tool = gem.root / "tools" / "t.js"
    from workbench.runners.deno import DenoRunner

    run = DenoRunner.call

    def then_swap(self: Any, *args: Any, **kw: Any) -> Any:
        out = run(self, *args, **kw)
        swap_for_fifo(tool)
        return out

    monkeypatch.setattr(DenoRunner, "call", then_swap)
    import threading

    box: dict[str, Any] = {}
    call = threading.Thread(target=lambda: box.update(res=bench.call("t")), daemon=True)
    call.start()
    call.join(20)  # a hang guard: a read waiting on the FIFO never returns without a writer
    blocked = call.is_alive()
    if blocked:
        with Unblocker(tool):  # free it, so the bench can close
            call.join()
    assert not blocked, "the hint's read of the tool file waited on the FIFO"
    res = box["res"]
    assert res.error is not None and res.error.code == "E_TOOL_ERROR", res.error
    assert "ctx.email is undefined" not in res.error.message
