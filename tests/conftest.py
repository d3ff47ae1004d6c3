"""Shared fixtures: a gem builder and benches on mock and real providers alike."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench
from workbench.bench.options import gem_options

EXAMPLE_GEM = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "notes"
# GEM_WORKBENCH_TEST_INSPECT=1: the benches of `opened` and `open_bench` run with Deno's
# inspector on (open(inspect=True)), as .ci/run runs the sandbox's red-team tests again: a
# debugging session must change none of a tool's permissions or limits
INSPECT = os.environ.get("GEM_WORKBENCH_TEST_INSPECT") == "1"
ARTIFACTS = Path(__file__).resolve().parent.parent / ".artifacts"  # CI keeps what tests put here


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the artifacts (e.g. the browser test's screenshot) in the log."""
    for path in sorted(ARTIFACTS.glob("*")) if ARTIFACTS.is_dir() else ():
        terminalreporter.write_line(f"artifact: {path}")


class GemBuilder:
    """Writes a gem folder: manifest.json plus tools/<name>.py from source strings."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest: dict[str, Any] = {"id": "test.gem", "name": "Test", "version": "0.1.0", "tools": []}

    def tool(
        self,
        name: str,
        source: str,
        *,
        schema: dict | None = None,
        side_effect: str = "write",
        ext: str = "py",
        **extra: Any,
    ) -> GemBuilder:
        path = self.root / "tools" / f"{name}.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        self.manifest["tools"].append(
            {
                "name": name,
                "file": f"tools/{name}.{ext}",
                "inputSchema": schema or {"type": "object"},
                "sideEffect": side_effect,
                **extra,
            }
        )
        return self

    def as_agent(self, agent_id: str = "agent-1", name: str = "A", **extra: Any) -> GemBuilder:
        """Make it an agent gem: tools declare `parameters`, nothing else (no sideEffect)."""
        self.manifest.update(platform="agent", agent={"id": agent_id, "name": name}, **extra)
        for t in self.manifest["tools"]:
            t["parameters"] = t.pop("inputSchema")
            t.pop("sideEffect")
        return self

    def collections(self, **indexes: list[str]) -> GemBuilder:
        self.manifest["data"] = {"collections": {n: {"indexes": i} for n, i in indexes.items()}}
        return self

    def schema_sql(self, sql: str) -> GemBuilder:
        (self.root / "db").mkdir(parents=True, exist_ok=True)
        (self.root / "db" / "schema.sql").write_text(sql)
        return self

    def write(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "manifest.json").write_text(json.dumps(self.manifest, indent=2))
        return self.root


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker under `--dist loadgroup` (.ci/run): each test of an `xdist_group` gets
    the `@group` suffix on its id by which xdist's scheduler sends a group to one worker. xdist
    (3.8) writes it to `item._nodeid`, which pytest 9 no longer reads (the id lives in
    `item._id`): the groups were silently lost, the browser tests spread over both workers (a
    JupyterLab each) and the inspector's npx runs side by side. Done here where xdist's did not."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")
        }
        suffix = f"@{'_'.join(sorted(names))}"
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id  # (pytest 9's; the suffix stays in its str())

            item._id = coerce_node_id(item.nodeid + suffix)


@pytest.fixture(params=["py", pytest.param("js", marks=pytest.mark.deno)])
def lang(request: pytest.FixtureRequest) -> str:
    """A tool's language: Python (in-process) or JS (the real Deno sandbox)."""
    return request.param


@pytest.fixture
def httpserver() -> Iterator[Any]:
    """A fresh pytest-httpserver on 127.0.0.1 per test (a free port; threaded, so a dripping
    handler holds up no other request), stopped after it."""
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        if server.is_running():
            server.stop()


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., workbench.Bench]]:
    """opened(gem or path, **options): a bench (mock providers unless told otherwise) with its
    state in tmp_path, headless; closed after the test, once background resource downloads
    ended. No connection credentials leak in from the environment."""
    for conn in ("ACME", "GITHUB"):
        for var in ("TOKEN", "HOSTS", "PATHS"):
            monkeypatch.delenv(f"GEM_WORKBENCH_CONN_{conn}_{var}", raising=False)
    benches: list[workbench.Bench] = []

    def opener(g: GemBuilder | Path, **kw: Any) -> workbench.Bench:
        path = g.write() if isinstance(g, GemBuilder) else g
        kw.setdefault("state_dir", tmp_path / "state")
        if "headless" in gem_options(path):  # a platform with ctx.files
            kw.setdefault("headless", True)
        if INSPECT:
            kw.setdefault("inspect", True)
        b = workbench.open(path, **kw)
        benches.append(b)
        return b

    try:
        yield opener
    finally:
        for b in benches:
            if (cache := b.providers.backends.get("resources")) is not None:
                cache.wait(15)
            b.close()


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    """mypy_cache(kind): a `--cache-dir=` option for mypy runs with one set of options (`kind`:
    "plain" is pyproject's, "strict" adds --strict), one folder per kind and session. Each run
    cold took 3-6 s, most of it analysing typeshed and workbench/ again; with the session's cache
    the later runs check only their own files. A module with errors is never cached (mypy deletes
    its entry), so a cached run reports what a cold one would."""
    root = tmp_path_factory.mktemp("mypy-cache")
    return lambda kind: f"--cache-dir={root / kind}"


@pytest.fixture
def gem(tmp_path: Path) -> GemBuilder:
    return GemBuilder(tmp_path / "gem")


@pytest.fixture
def notes() -> Any:
    """The example gem `notebooks/gems/notes` on mock providers."""
    with workbench.open(EXAMPLE_GEM) as b:
        yield b


@pytest.fixture(params=["mock", "real"])
def kind(request: pytest.FixtureRequest) -> str:
    """Every rule is tested against both providers: they must be indistinguishable."""
    return request.param


@pytest.fixture
def open_bench(tmp_path: Path, kind: str) -> Callable[..., workbench.Bench]:
    """open_bench(gem_path, **options): a bench on `kind` providers, in tmp_path, closed after."""
    benches: list[workbench.Bench] = []
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)

    def opener(path: Path | GemBuilder, **kw: Any) -> workbench.Bench:
        if isinstance(path, GemBuilder):
            path = path.write()
        kw.setdefault("state_dir", tmp_path / "state")
        for name, value in (("workspace", workspace), ("headless", True)):
            if name in gem_options(path):  # a platform with ctx.files
                kw.setdefault(name, value)
        if INSPECT:
            kw.setdefault("inspect", True)
        b = workbench.open(path, providers=kind, **kw)
        benches.append(b)
        return b

    opener.workspace = workspace  # type: ignore[attr-defined]
    yield opener
    for b in benches:
        b.close()


# A tool running a list of ctx.files operations in ONE call: [["write", "a", "x"], ["read", "a"]]
OPS_TOOL = """
from workbench import WorkbenchError

def handle(input, ctx):
    out = []
    for op, *args in input["ops"]:
        try:
            out.append({"ok": getattr(ctx.files, op)(*args)})
        except WorkbenchError as e:
            out.append({"error": e.code, "message": e.message, "details": e.details})
    return out
"""


FILES_TOOL = """
def handle(input, ctx):
    fn = getattr(ctx.files, input["op"])
    return {"result": fn(*input.get("args", []), **input.get("kwargs", {}))}
"""


@pytest.fixture
def files_bench(gem: GemBuilder, open_bench: Callable[..., workbench.Bench]):
    """A bench whose tool `f` runs one ctx.files method: f(op, args, kwargs)."""
    gem.tool("f", FILES_TOOL)

    def run(op: str, *args: Any, **kwargs: Any) -> workbench.CallResult:
        return bench.call("f", {"op": op, "args": list(args), "kwargs": kwargs})

    bench = open_bench(gem)
    run.bench = bench  # type: ignore[attr-defined]
    run.workspace = open_bench.workspace  # type: ignore[attr-defined]
    return run


@pytest.fixture(autouse=True)
def _ctrl_c_is_pythons_own(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts with Python's own Ctrl-C handling, whatever the process inherited (a
    job a shell started in the background ignores SIGINT, and so would every process a test
    starts); one that leaves another handler behind is named in a warning."""
    import signal
    import warnings

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    now = signal.getsignal(signal.SIGINT)
    if now is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        warnings.warn(f"{request.node.nodeid} left SIGINT's handler as {now!r}", stacklevel=1)


# The browser tests' JupyterLab, one per session (tests/_lab.py): defined here, not imported into
# each browser module, for a module's import would make it one FixtureDef (one server) per module.
# (Imported last: _lab reads ARTIFACTS from this module.)
from _lab import folder, lab, labs, stop_all  # noqa: E402, F401


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last browser test of a run of them, stop their JupyterLab and Chromium: no other
    test runs beside Playwright's event loop (see _lab.Labs)."""
    if "lab" in getattr(item, "fixturenames", ()) and "lab" not in getattr(nextitem, "fixturenames", ()):
        stop_all()
