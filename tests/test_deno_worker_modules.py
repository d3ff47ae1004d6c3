"""The sandbox Worker's bridge as modules of one concern each (runners/deno/worker/), run as
one bundle (bundle.py): small modules that import each other without circles, a bundle that
runs them in the order ES modules would and exports nothing, written once and atomically, and a
Worker that still reaches only what it did (the modules are not importable by a tool)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder

from workbench._deno import DENO_FLAGS, deno_bin, minimal_env
from workbench._errors import WorkbenchError
from workbench.runners.deno import bundle
from workbench.runners.deno import sandbox as sandbox_module

DENO = Path(bundle.__file__).parent
SIBLING = re.compile(r'^import\s[^;]*?from\s+"\./([\w-]+\.ts)";', re.M)


def test_worker_bridge_is_split_by_concern_into_small_modules() -> None:
    assert not (DENO / "worker.ts").exists()  # the 1,300-line module is gone
    sizes = {p.name: len(p.read_text().splitlines()) for p in (DENO / "worker").glob("*.ts")}
    assert len(sizes) >= 8, sizes
    assert max(sizes.values()) <= 300, sizes
    assert bundle.order()[-1] == "main.ts" and set(bundle.order()) == set(sizes)  # all reached


def test_worker_bundle_runs_modules_in_import_order_and_exports_nothing() -> None:
    order = bundle.order()
    assert order[0] == "primordials.ts"  # the built-ins are taken before anything replaces one
    for i, name in enumerate(order):
        for dep in SIBLING.findall((DENO / "worker" / name).read_text()):
            assert order.index(dep) < i, (name, dep)
    text = bundle.source()
    assert not re.search(r"^export\b", text, re.M)  # nothing a tool importing it could reach
    assert 'from "./' not in text and '"../' not in text
    imports = set(re.findall(r'^import\s[^;]*?"([^"]+)";', text, re.M))
    assert imports == {(DENO / "internals.ts").as_uri()}, imports  # node_crypto.ts: import() only
    assert f'import("{(DENO / "node_crypto.ts").as_uri()}")' in text


def test_worker_modules_in_a_circle_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "main.ts").write_text('import { a } from "./a.ts";\n')
    (tmp_path / "a.ts").write_text('import { b } from "./b.ts";\nexport const a = 1;\n')
    (tmp_path / "b.ts").write_text('import { a } from "./a.ts";\nexport const b = a;\n')
    monkeypatch.setattr(bundle, "WORKER", tmp_path)
    with pytest.raises(ValueError, match=r"circle: main.ts -> a.ts -> b.ts -> a.ts"):
        bundle.order()


def test_worker_bundle_is_written_once_and_replaces_older_ones(tmp_path: Path) -> None:
    folder = tmp_path / "bridge"
    folder.mkdir()
    (folder / "worker.0123456789abcdef.ts").write_text("// an older bridge")
    path = bundle.write(folder)
    assert path.read_text() == bundle.source()
    assert [p.name for p in folder.iterdir()] == [path.name]  # the older one and no temp file left
    stat = path.stat()
    assert bundle.write(folder) == path and path.stat().st_mtime_ns == stat.st_mtime_ns  # not rewritten
    path.write_text("// planted: a state folder copied from elsewhere")
    assert bundle.write(folder) == path and path.read_text() == bundle.source()  # its content checked


def test_worker_bundle_checked_once_is_read_again_once_written(tmp_path: Path) -> None:
    # a start after the first does not read the bundle again (bundle.py _checked), unless the
    # file was written since: the same size and mtime given back do not hide that (its ctime)
    path = bundle.write(tmp_path)
    text = bundle.source()
    stat = path.stat()
    planted = "//" + text[2:-1].replace("a", "b") + "\n"
    assert len(planted.encode()) == len(text.encode())
    path.write_text(planted)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert bundle.write(tmp_path) == path and path.read_text() == text


@pytest.mark.deno
def test_worker_modules_typecheck_as_es_modules(tmp_path: Path) -> None:
    """Each module imports what it uses: `deno check` of the entry finds every name."""
    got = subprocess.run(
        [
            deno_bin(),
            "check",
            *(f for f in DENO_FLAGS if f != "--no-prompt"),
            "--quiet",
            str(DENO / "worker" / "main.ts"),
        ],
        env=minimal_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr[-3000:]


@pytest.mark.deno
def test_worker_modules_and_bundle_give_a_tool_nothing(gem: GemBuilder, opened: Callable) -> None:
    """A tool cannot import the bridge's modules (outside what it may read), and importing the
    bundle it runs in gives the same module again: no export (send, the pending ctx calls)."""
    gem.tool(
        "reach",
        """
        export default async ({ urls }) => {
          const seen = {};
          for (const url of urls) {
            try { seen[url] = Object.keys(await import(url)); }
            catch (e) { seen[url] = e.name + ": " + e.message; }
          }
          return seen;
        }""",
        ext="js",
    )
    bench = opened(gem)
    assert bench.call("reach", {"urls": []}).ok  # started: its bundle is written
    bundles = list(bench.sandbox.deno_dir.parent.glob("bridge/worker.*.ts"))
    assert len(bundles) == 1, bundles
    modules = [p.as_uri() for p in sorted((DENO / "worker").glob("*.ts"))]
    res = bench.call("reach", {"urls": [*modules, bundles[0].as_uri()]})
    assert res.ok, res.error
    refused = "TypeError: Requires read access"
    assert all(str(res.value[u]).startswith(refused) for u in modules), res.value
    assert res.value[bundles[0].as_uri()] == [] or res.value[bundles[0].as_uri()].startswith(refused)


def test_deno_runner_functions_are_at_most_80_lines() -> None:
    long = {}
    for path in DENO.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > 80:
                    long[f"{path.name}:{node.name}"] = size
    assert not long, long


# What the bridge does per call, counted, not timed: a module that wraps Object.defineProperty
# and String.prototype.indexOf runs in the Worker before the bridge (which takes them then), and
# the tool reads the counts. Building a call's ctx made a new property descriptor per method
# and split each capability's path ("storage.kv") again.
COUNTER = """
const counted = { descriptors: 0, indexOf: 0 };
const seen = new WeakSet(), has = WeakSet.prototype.has, add = WeakSet.prototype.add;
const apply = Reflect.apply, define = Object.defineProperty, indexOf = String.prototype.indexOf;
Object.defineProperty = function (o, key, d) {
  if (d !== null && typeof d === "object" && !apply(has, seen, [d])) {
    apply(add, seen, [d]);
    counted.descriptors++;
  }
  return define(o, key, d);
};
define(String.prototype, "indexOf", { value: function (...a) {
  counted.indexOf++;
  return apply(indexOf, this, a);
}, writable: true, configurable: true });
globalThis.bridgeWork = () => [counted.descriptors, counted.indexOf];
"""


@pytest.mark.deno
def test_a_warm_call_builds_its_ctx_without_new_descriptors_or_path_splits(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    gem.tool("work", "export default async (input, ctx) => globalThis.bridgeWork()", ext="js")
    folder = gem.root / "counting"  # (the sandbox may read the gem)
    folder.mkdir()
    (folder / "counter.js").write_text(COUNTER)
    command = sandbox_module.Sandbox._command

    def counting(self: sandbox_module.Sandbox, fifo_dir: str) -> tuple[list[str], str, str]:
        cmd, to_host, from_host = command(self, fifo_dir)
        at = next(i for i, a in enumerate(cmd) if a.endswith("host.ts")) + 4  # the Worker's module
        (folder / "worker.js").write_text(f'import "./counter.js";\nimport "{cmd[at]}";\n')
        cmd[at] = (folder / "worker.js").as_uri()
        return cmd, to_host, from_host

    monkeypatch.setattr(sandbox_module.Sandbox, "_command", counting)
    bench = opened(gem)
    assert bench.call("work").ok  # (the first call imports the tool)
    first = bench.call("work")
    for _ in range(9):
        assert bench.call("work").ok
    last = bench.call("work")
    assert first.ok and last.ok, (first.error, last.error)
    descriptors, index_of = ((b - a) / 10 for a, b in zip(first.value, last.value))
    # this gem's ctx: 20 methods in 6 capabilities, each given a descriptor of its own per call
    # before, and each promise the bridge settles two (35 in all, and 8 path splits); one left
    assert descriptors <= 1 and index_of == 0, (descriptors, index_of)


@pytest.mark.deno
def test_a_bridge_that_cannot_be_written_is_a_coded_error(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    """As any failure to start the sandbox: the call raises it, coded (and the next one tries again)."""
    gem.tool("one", "export default async () => 1", ext="js")
    state = tmp_path / "state"
    state.mkdir()
    (state / "bridge").write_text("not a folder")  # where the bundle goes
    bench = opened(gem, state_dir=state)
    with pytest.raises(WorkbenchError) as got:
        bench.call("one")
    assert got.value.code == "E_SANDBOX" and "bridge could not be written" in got.value.message
    assert got.value.details["path"] == str(state / "bridge")
    (state / "bridge").unlink()
    assert bench.call("one").value == 1
