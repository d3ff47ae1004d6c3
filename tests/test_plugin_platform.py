"""A fourth platform as a plugin (issue 27, point 5): tests/plugins/gw_fourth is installed with
pip into a folder of its own, and a fresh Python with that folder on its path opens, checks,
calls, scaffolds and generates types for a gem of it; nothing under workbench/ names it. A
plugin that cannot be used is a PluginWarning naming its entry point, and the built-ins work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _plugins import PLUGINS, ROOT, fake_dist, install, run

PLUGIN = PLUGINS / "gw_fourth"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin installed by pip, offline, into a folder of its own."""
    return install("gw_fourth", tmp_path_factory.mktemp("plugin"))


def test_nothing_under_workbench_names_the_fourth_platform() -> None:
    hits = [
        p for p in (ROOT / "workbench").rglob("*.py") if "fourth" in p.read_text(encoding="utf-8").lower()
    ]
    assert hits == []


def test_a_plugin_platform_opens_checks_calls_scaffolds_and_has_types(site: Path, tmp_path: Path) -> None:
    proc = run(
        """
        import json, warnings
        warnings.simplefilter("error")  # the plugin loads without a PluginWarning
        import workbench
        from workbench import platforms
        from workbench.cli import main
        from workbench.types import gem_files

        out = {"names": platforms.names()}
        # scaffold: gem-workbench new --platform fourth (a Python tool)
        out["new"] = main(["new", "greeter", "--platform", "fourth", "--lang", "py", "--dir", "."])
        out["files"] = sorted(str(p) for p in __import__("pathlib").Path("greeter").rglob("*") if p.is_file())
        out["check"] = main(["check", "greeter"])
        prof = platforms.detect("greeter")
        out["detected"] = prof.name
        with workbench.open("greeter") as bench:
            res = bench.call("hello", {"name": "Ada"})
            out["call"] = [res.ok, res.value, res.error and res.error.code]
            again = bench.call("hello", {"name": "Bob"})
            out["again"] = again.value
            out["kv"] = bench.kv().to_dict("records")
            bad = bench.call("hello", {})
            out["bad"] = bad.error and bad.error.code
        # types: what .gem-workbench/ holds, and `python -m workbench.types fourth --out`
        out["gem_files"] = sorted(gem_files(platforms.load("greeter")))
        out["types"] = __import__("workbench.types.__main__", fromlist=["main"]).main(
            ["fourth", "--out", SITE + "/gw_fourth/types_out"]
        )
        # an unknown platform is a usage error listing the registry
        out["unknown"] = main(["new", "x", "--platform", "nope", "--dir", "."])
        print("RESULT" + json.dumps(out))
        """.replace("SITE", repr(str(site))),
        site,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["names"] == ["notochord", "agent", "ekanos", "fourth"]
    assert out["new"] == 0 and out["check"] == 0 and out["detected"] == "fourth"
    assert "greeter/fourth.json" in out["files"] and "greeter/tools/hello.py" in out["files"]
    assert "greeter/.gem-workbench/fourth.d.ts" in out["files"], out["files"]
    assert out["call"] == [True, {"greeting": "Hello, Ada!", "count": 1}, None]
    assert out["again"] == {"greeting": "Hello, Bob!", "count": 2}
    assert out["kv"] == [{"key": "greetings", "value": "2"}]
    assert out["bad"] == "E_SCHEMA"  # the input schema of fourth.json applies
    assert out["gem_files"] == ["fourth.d.ts", "gem.d.ts", "manifest.schema.json"]
    assert out["types"] == 0 and out["unknown"] == 2
    assert "error: --platform 'nope': use notochord, agent, ekanos or fourth" in proc.stderr
    dts = (tmp_path / "greeter" / ".gem-workbench" / "fourth.d.ts").read_text(encoding="utf-8")
    assert (
        "export interface Ctx {" in dts and "readonly files: Files;" in dts and "export interface KV {" in dts
    )
    assert "email" not in dts and "registry (gw_fourth/__init__.py)" in dts
    py = (site / "gw_fourth" / "types_out" / "fourth.py").read_text(encoding="utf-8")
    compile(py, "fourth.py", "exec")
    assert "class Ctx(Protocol):" in py and "from gw_fourth.types import Ctx" in py
    # the scaffolded gem's own test passes under pytest
    test = run(
        "import sys, pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'greeter/tests']))",
        site,
        cwd=tmp_path,
    )
    assert test.returncode == 0, test.stdout + test.stderr


@pytest.mark.deno
def test_a_plugin_platforms_js_tool_runs_and_type_checks(site: Path, tmp_path: Path) -> None:
    proc = run(
        """
        import json
        import workbench
        from workbench.cli import main

        assert main(["new", "jsgreeter", "--platform", "fourth", "--lang", "js", "--dir", "."]) == 0
        out = {"check": main(["check", "jsgreeter", "--typecheck"])}
        with workbench.open("jsgreeter") as bench:
            res = bench.call("hello", {"name": "Ada"})
            out["call"] = [res.ok, res.value]
            out["file"] = bench.call("hello", {"name": "Eve"}).ok
        print("RESULT" + json.dumps(out))
        """,
        site,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out == {"check": 0, "call": [True, {"greeting": "Hello, Ada!", "count": 1}], "file": True}


def test_a_broken_plugin_is_a_warning_and_the_builtins_still_work(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    fake_dist(
        site,
        "gem_workbench.platforms",
        "gw_raises",
        "raises = gw_raises:PROFILE",
        "raise RuntimeError('plugin bug')\n",
    )
    fake_dist(
        site,
        "gem_workbench.platforms",
        "gw_notprofile",
        "notprofile = gw_notprofile:PROFILE",
        "PROFILE = {'name': 'x'}\n",
    )
    fake_dist(
        site,
        "gem_workbench.platforms",
        "gw_dup",
        "dup = gw_dup:PROFILE",
        """
        import dataclasses
        from workbench.platforms import notochord
        PROFILE = dataclasses.replace(notochord.PROFILE, title="an impostor")
        """,
    )
    proc = run(
        """
        import json, warnings
        from workbench import platforms
        from workbench.cli import main

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = platforms.names()
            platforms.names()  # loaded once: warned once
        out = {
            "names": names,
            "warnings": [(w.category.__name__, str(w.message)) for w in caught],
            "title": platforms.profile("notochord").title,
            "new": main(["new", "plain", "--lang", "py", "--dir", "."]),
            "check": main(["check", "plain"]),
        }
        import workbench
        with workbench.open("plain") as bench:
            out["call"] = bench.call("hello", {"name": "Ada"}).ok
        print("RESULT" + json.dumps(out))
        """,
        site,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["names"] == ["notochord", "agent", "ekanos"]
    assert out["title"] == "Notochord gems" and out["new"] == 0 and out["check"] == 0 and out["call"] is True
    messages = sorted(out["warnings"])
    assert [c for c, _ in messages] == ["PluginWarning"] * 3, messages
    dup, notprofile, raises = (m for _, m in messages)
    assert "entry point 'dup' = 'gw_dup:PROFILE'" in dup and "'notochord' is already taken" in dup
    assert (
        "entry point 'notprofile'" in notprofile and "is a dict, not a workbench.plugin.Profile" in notprofile
    )
    assert "entry point 'raises'" in raises and "failed to load: RuntimeError: plugin bug" in raises


def test_the_docs_examples_are_the_plugins_own_text() -> None:
    """docs/platforms.md shows the tested plugins: each block with a title occurs verbatim in the
    file it names (under tests/plugins/gw_fourth, or tests/plugins/ for another plugin's)."""
    from test_docs import blocks

    shown = [b for b in blocks((ROOT / "docs" / "platforms.md").read_text(encoding="utf-8")) if b.title]
    assert len(shown) >= 3
    for b in shown:
        file = PLUGINS / b.title if (PLUGINS / b.title).is_file() else PLUGIN / b.title
        assert b.code.strip() in file.read_text(encoding="utf-8"), f"docs/platforms.md:{b.line}"


def test_a_plugin_raising_systemexit_keyboardinterrupt_or_a_baseexception_at_load_is_a_warning(
    tmp_path: Path,
) -> None:
    """Each ended the CLI before (only Exception was caught); now each is skipped, named."""
    site = tmp_path / "site"
    site.mkdir()
    raising = {
        "gw_exit": "raise SystemExit(3)\n",
        "gw_ctrlc": "raise KeyboardInterrupt('from the plugin')\n",
        "gw_base": "class Odd(BaseException):\n    pass\nraise Odd('not an Exception')\n",
        "gw_genexit": "raise GeneratorExit\n",
    }
    for name, module in raising.items():
        fake_dist(site, "gem_workbench.platforms", name, f"{name[3:]} = {name}:PROFILE", module)
    proc = run(
        """
        import json, warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from workbench import platforms
            from workbench.cli import main

            out = {"names": platforms.names(), "new": main(["new", "plain", "--lang", "py", "--dir", "."])}
            out["check"] = main(["check", "plain"])
            import workbench
            with workbench.open("plain") as bench:
                out["call"] = bench.call("hello", {"name": "Ada"}).ok
        out["warnings"] = sorted(str(w.message) for w in caught if w.category.__name__ == "PluginWarning")
        print("RESULT" + json.dumps(out))
        """,
        site,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["names"] == ["notochord", "agent", "ekanos"]
    assert out["new"] == 0 and out["check"] == 0 and out["call"] is True
    found = "\n".join(out["warnings"])
    for expected in (
        "entry point 'exit' = 'gw_exit:PROFILE' (group gem_workbench.platforms): failed to load: SystemExit: 3",
        "entry point 'ctrlc' = 'gw_ctrlc:PROFILE' (group gem_workbench.platforms): failed to load: "
        "KeyboardInterrupt: from the plugin",
        "entry point 'base' = 'gw_base:PROFILE' (group gem_workbench.platforms): failed to load: Odd: not an Exception",
        "entry point 'genexit' = 'gw_genexit:PROFILE' (group gem_workbench.platforms): failed to load: GeneratorExit",
    ):
        assert expected in found, found
