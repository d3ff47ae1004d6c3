"""A toy capability as a plugin (issue 27, point 5): tests/plugins/gw_clock registers ctx.ticker
in the `gem_workbench.capabilities` entry-point group and Clockwork, a platform whose ctx has
it, in `gem_workbench.platforms`; installed by pip into a folder of its own, the capability is
seen in the Python ctx, the JS ctx, `open()`'s options, the CLI's flags and actions, `%gem
open` and `%state`, and a bench view — and refused, naming Clockwork, where a platform lacks
it; the type generator declares it. Nothing under workbench/ names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _plugins import ROOT, fake_dist, install, run

MANIFEST = {
    "id": "ticker",
    "name": "Ticker",
    "version": "0.1.0",
    "platform": "clockwork",
    "tools": [
        {
            "name": name,
            "file": f"tools/{name}.{ext}",
            "description": "read the clock, move it on, read it again",
            "input": {"type": "object", "properties": {"ms": {"type": "integer"}}},
        }
        for name, ext in (("tick", "py"), ("tickjs", "js"))
    ],
}
PY_TOOL = """\
def handle(input, ctx):
    before = ctx.ticker.now()
    ctx.ticker.advance(input.get("ms", 1000))
    ctx.storage.kv.set("last", str(ctx.ticker.now()))
    return {"before": before, "after": ctx.ticker.now()}
"""
JS_TOOL = """\
export default async function (input, ctx) {
  const before = await ctx.ticker.now();
  await ctx.ticker.advance(input.ms ?? 1000);
  return { before, after: await ctx.ticker.now() };
}
"""
NOTES = ROOT / "notebooks" / "gems" / "notes"  # a Notochord gem: no ctx.ticker


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install("gw_clock", tmp_path_factory.mktemp("plugin"))


@pytest.fixture
def gem(tmp_path: Path) -> Path:
    root = tmp_path / "ticker"
    (root / "tools").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    (root / "tools" / "tick.py").write_text(PY_TOOL, encoding="utf-8")
    (root / "tools" / "tickjs.js").write_text(JS_TOOL, encoding="utf-8")
    return root


def result(proc) -> dict:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.split("RESULT", 1)[1])


def test_nothing_under_workbench_names_the_toy_capability() -> None:
    hits = [
        p
        for p in (ROOT / "workbench").rglob("*.py")
        if any(
            w in p.read_text(encoding="utf-8")
            for w in ("clockwork", "ticker_start", "ctx.ticker", "gw_clock", '"ticker"', "ticker_log")
        )
    ]
    assert hits == []


def test_a_plugin_capability_is_in_the_python_ctx_open_options_and_a_view(site: Path, gem: Path) -> None:
    out = result(
        run(
            f"""
            import inspect, json, warnings
            warnings.simplefilter("error")  # the plugins load without a PluginWarning
            import workbench
            from workbench import ctx

            from workbench import _plugins

            with workbench.open({str(NOTES)!r}):  # a built-in's gem: no plugin is read
                out = {{"scanned": _plugins._installed.cache_info().currsize}}
                out["before"] = "ticker_start" in workbench.open.__doc__
            with workbench.open({str(gem)!r}, ticker_start=5000) as bench:
                # Clockwork was read to open its gem: help(open) now has its options
                out["doc"] = "ticker_start: int = 0  [Clockwork gems]" in workbench.open.__doc__
                out["signature"] = "ticker_start" in inspect.signature(workbench.open).parameters
                out["specs"] = [s.impl for s in ctx.specs()][-1]
                out["call"] = bench.call("tick", {{"ms": 250}}).value
                out["again"] = bench.call("tick", {{}}).value
                out["kv"] = bench.kv().to_dict("records")
                out["view"] = bench.ticker()[["op", "ms"]].values.tolist()
                out["dir"] = "ticker" in dir(bench) and "outbox" not in dir(bench)
                bad = bench.call("tick", {{"ms": -1}})
                out["bad"] = [bad.error.code, bad.error.details.get("field")]
                try:
                    bench.outbox()
                except AttributeError as exc:
                    out["foreign_view"] = str(exc)
            try:
                workbench.open({str(gem)!r}, ticker_start="soon")
            except workbench.UsageError as exc:
                out["bad_option"] = exc.message
            try:
                workbench.open({str(NOTES)!r}, ticker_start=1)
            except workbench.UsageError as exc:
                out["foreign_option"] = exc.message
            with workbench.open({str(NOTES)!r}) as notes:
                try:
                    notes.ticker()
                except AttributeError as exc:
                    out["notes_view"] = str(exc)
                out["notes_dir"] = "ticker" in dir(notes)
            types = __import__("workbench.types.__main__", fromlist=["main"]).main
            out["types"] = types(["clockwork", "--out", "types"])
            print("RESULT" + json.dumps(out))
            """,
            site,
            cwd=gem.parent,
        )
    )
    assert out["scanned"] == 0 and out["before"] is False  # reading plugins costs a metadata scan
    assert out["specs"] == "ticker" and out["doc"] and out["signature"]
    # a plugin capability's methods are typed from the row's parameter names (docs/platforms.md)
    assert out["types"] == 0
    dts = (gem.parent / "types" / "clockwork.d.ts").read_text(encoding="utf-8")
    assert "readonly ticker: Ticker;" in dts and "advance(ms: unknown): Promise<unknown>;" in dts
    assert out["call"] == {"before": 5000, "after": 5250}
    assert out["again"] == {"before": 5250, "after": 6250}
    assert out["kv"] == [{"key": "last", "value": "6250"}]
    assert out["view"] == [
        ["now #1", 5000],
        ["advance", 5250],
        ["now #2", 5250],
        ["now #3", 5250],  # each call counts its own reads (the capability's per-call state)
        ["now #1", 5250],
        ["advance", 6250],
        ["now #2", 6250],
        ["now #3", 6250],
    ]
    assert out["dir"] and out["bad"] == ["E_INVALID_ARGUMENT", "ms"]
    assert out["foreign_view"] == (
        "outbox() is a view of agent custom tools (ctx.tools); Clockwork gems do not have it"
    )
    assert out["bad_option"].startswith("ticker_start='soon': an integer of milliseconds")
    assert out["foreign_option"].startswith(
        "ticker_start= is an option of Clockwork gems (ctx.ticker); Notochord gems do not have it"
    ), out["foreign_option"]
    assert (
        out["notes_view"]
        == "ticker() is a view of Clockwork gems (ctx.ticker); Notochord gems do not have it"
    )
    assert out["notes_dir"] is False


@pytest.mark.deno
def test_a_plugin_capability_is_in_the_js_ctx(site: Path, gem: Path) -> None:
    out = result(
        run(
            f"""
            import json
            import workbench

            with workbench.open({str(gem)!r}, ticker_start=100) as bench:
                res = bench.call("tickjs", {{"ms": 7}})
                out = {{"value": res.value, "trace": [r["method"] for r in res.trace_rows]}}
                bad = bench.call("tickjs", {{"ms": -3}})  # the schema lets it by; the rule does not
                out["bad"] = bad.error and bad.error.code
            print("RESULT" + json.dumps(out))
            """,
            site,
            cwd=gem.parent,
        )
    )
    assert out["value"] == {"before": 100, "after": 107}
    assert out["trace"] == ["ticker.now", "ticker.advance", "ticker.now"]
    assert out["bad"] == "E_INVALID_ARGUMENT"


def test_a_plugin_capability_has_cli_flags_actions_and_magics(site: Path, gem: Path) -> None:
    proc = run(
        f"""
        import contextlib, io, json
        from workbench.cli import main
        from workbench.bench.options import gem_flags

        out = {{}}
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            out["call"] = main(["call", {str(gem)!r}, "tick", "--input", '{{"ms": 5}}',
                                "--ticker-start", "100", "--advance-ticker", "50"])
        out["printed"] = json.loads(buf.getvalue())
        out["foreign"] = main(["call", {str(NOTES)!r}, "hello", "--ticker-start", "100"])
        out["flags"] = [f for f in gem_flags({str(gem)!r}) if "ticker" in f]
        out["notes_flags"] = [f for f in gem_flags({str(NOTES)!r}) if "ticker" in f]
        with contextlib.redirect_stdout(buf):
            try:
                main(["call", "--help"])
            except SystemExit:
                pass
        out["help"] = "ctx.ticker (Clockwork gems):" in buf.getvalue()

        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        cfg = Config()
        cfg.HistoryManager.hist_file = ":memory:"
        ip = InteractiveShell.instance(config=cfg)
        ip.run_line_magic("load_ext", "workbench")
        assert ip.run_cell("%gem open {gem} --ticker-start 42").success
        out["magic"] = ip.user_ns["bench"].call("tick", {{"ms": 8}}).value
        out["state"] = ip.run_cell("%state ticker").result[["op", "ms"]].values.tolist()[-1]
        ip.user_ns["bench"].close()
        print("RESULT" + json.dumps(out))
        """,
        site,
        cwd=gem.parent,
    )
    out = result(proc)
    assert out["call"] == 0 and out["printed"] == {"before": 150, "after": 155}
    assert out["foreign"] == 2
    assert (
        "--ticker-start (ticker_start=) is an option of Clockwork gems (ctx.ticker); Notochord gems do not have it"
        in proc.stderr
    )
    assert out["flags"] == ["--ticker-start", "--advance-ticker"] and out["notes_flags"] == []
    assert out["help"]
    assert out["magic"] == {"before": 42, "after": 50} and out["state"] == ["now #3", 50]


def test_a_broken_capability_plugin_is_a_warning_and_the_builtins_still_work(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    fake_dist(
        site,
        "gem_workbench.capabilities",
        "gw_capraises",
        "raises = gw_capraises:SPEC",
        "raise RuntimeError('plugin bug')\n",
    )
    fake_dist(
        site, "gem_workbench.capabilities", "gw_capnot", "notspec = gw_capnot:SPEC", "SPEC = {'impl': 'x'}\n"
    )
    fake_dist(
        site,
        "gem_workbench.capabilities",
        "gw_capdup",
        "dup = gw_capdup:SPEC",
        "import dataclasses\nfrom workbench.ctx import SPECS\nSPEC = dataclasses.replace(SPECS['files'], title='an impostor')\n",
    )
    out = result(
        run(
            f"""
            import json, warnings
            from workbench import ctx
            import workbench

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                impls = [s.impl for s in ctx.specs()]
                ctx.specs()  # loaded once: warned once
            out = {{"impls": impls, "warnings": [(w.category.__name__, str(w.message)) for w in caught]}}
            with workbench.open({str(NOTES)!r}) as bench:
                out["call"] = bench.call("list_notes", {{}}).ok
                out["title"] = ctx.capability("files").title
            print("RESULT" + json.dumps(out))
            """,
            site,
            cwd=tmp_path,
        )
    )
    assert out["impls"] == list(__import__("workbench.ctx", fromlist=["SPECS"]).SPECS)
    messages = sorted(m for _, m in out["warnings"])
    assert [c for c, _ in out["warnings"]] == ["PluginWarning"] * 3, out["warnings"]
    assert "entry point 'dup' = 'gw_capdup:SPEC' (group gem_workbench.capabilities)" in messages[0]
    assert "already taken" in messages[0]
    assert "entry point 'notspec'" in messages[1] and "not a workbench.plugin.CapabilitySpec" in messages[1]
    assert "entry point 'raises'" in messages[2] and "RuntimeError: plugin bug" in messages[2]
    assert out["call"] is True and out["title"] == "ctx.files"


def test_a_plugin_capabilitys_ticker_is_in_snapshot_diff_restore_and_a_state_folder(
    site: Path, gem: Path
) -> None:
    """The plugin declares its ticker as a state part (and its reads as a log part) on its spec
    only: snapshot, diff, restore, export_state and open(state=) take it in."""
    out = result(
        run(
            f"""
            import json
            import workbench
            from workbench.ctx import state

            with workbench.open({str(gem)!r}, ticker_start=5000) as bench:
                out = {{"parts": [(p.name, p.role) for p, _ in state.parts_of(bench.profile)]}}
                snap = bench.snapshot()
                bench.call("tick", {{"ms": 250}})
                out["diff"] = bench.diff(snap)[["kind", "key", "before", "after"]].values.tolist()
                out["log"] = len(bench.ticker())
                folder = bench.export_state("exported")
                out["state_json"] = json.loads((folder / "state.json").read_text())["ticker"]
                bench.restore(snap)
                out["restored"] = bench.call("tick", {{"ms": 0}}).value
                bench.restore(snap)
                out["log_restored"] = len(bench.ticker())
                try:
                    state.put(bench, {{"ticker": {{"ms": "soon"}}}}, code="E_STATE", label="state.json")
                except workbench.WorkbenchError as exc:
                    out["hostile"] = [exc.code, exc.details.get("field")]
            with workbench.open({str(gem)!r}, state="exported") as again:
                out["opened"] = again.call("tick", {{"ms": 0}}).value
            print("RESULT" + json.dumps(out))
            """,
            site,
            cwd=gem.parent,
        )
    )
    assert ["ticker", "state"] in out["parts"] and ["ticker_log", "log"] in out["parts"]
    assert ["ticker", "ms", 5000, 5250] in out["diff"]
    assert out["state_json"] == {"ms": 5250}
    assert out["restored"] == {"before": 5000, "after": 5000}
    assert out["log_restored"] == 0 and out["log"] == 4  # now, advance, now, now
    assert out["hostile"] == ["E_STATE", "ticker.ms"]
    assert out["opened"] == {"before": 5250, "after": 5250}


def test_a_plugin_capabilitys_ticker_is_in_a_pinned_case_and_a_bundle(site: Path, gem: Path) -> None:
    out = result(
        run(
            f"""
            import json, zipfile, pathlib
            import workbench
            from workbench.pins.replay import replay_case
            from workbench.bundles.replay import replay_bundle

            with workbench.open({str(gem)!r}, ticker_start=5000, seed=1) as bench:
                bench.call("tick", {{"ms": 100}})
                res = bench.call("tick", {{"ms": 250}})
                case = json.loads(res.pin("second").read_text())
                path = bench.export("t.gemrepro")
            out = {{"before": case["before"].get("ticker"),
                    "changes": [c for c in case["changes"] if c["kind"] == "ticker"]}}
            out["case_replays"] = replay_case(pathlib.Path({str(gem)!r}) / "tests/calls/tick/second.json").lines
            start = json.loads(zipfile.ZipFile(path).read("start.json"))
            out["start"] = start["state"].get("ticker")
            out["bundle"] = [r.lines for r in replay_bundle(path, trust=True)]
            print("RESULT" + json.dumps(out))
            """,
            site,
            cwd=gem.parent,
        )
    )
    assert out["before"] == {"ms": 5100}, out
    assert out["changes"] == [
        {"kind": "ticker", "where": "ticker", "key": "ms", "change": "changed", "after": 5350}
    ]
    assert out["case_replays"] == []
    assert out["start"] == {"ms": 5000}
    assert out["bundle"] == [[], []]
