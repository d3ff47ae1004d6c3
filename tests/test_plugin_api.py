"""The plugin API (docs/platforms.md "The plugin module"): workbench.plugin is all a platform
or capability plugin imports; at load each plugin's rows are checked against what implements
them, as pluggy's `_verify_hook` checks a hookimpl against its hookspec, and a plugin with a
problem is skipped with a PluginWarning naming `platform.row.method(param)` while the bench
opens; the built-ins pass the same check; the manifest lint every platform starts with is one
helper."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _plugins import PLUGINS, ROOT, fake_dist, run

import workbench
import workbench.plugin as plugin
from workbench.ctx.registry import SPECS
from workbench.ctx.spec import BENCH
from workbench.ctx.verify import profile_problems
from workbench.platforms import registry

NOTES = ROOT / "notebooks" / "gems" / "notes"


def _workbench_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "workbench" or m.startswith("workbench.")}


@pytest.mark.parametrize("name", ["gw_fourth", "gw_clock"])
def test_the_test_plugins_import_only_the_plugin_module(name: str) -> None:
    files = sorted((PLUGINS / name).rglob("*.py"))
    assert files
    assert {str(f.relative_to(PLUGINS)): _workbench_imports(f) for f in files} == {
        str(f.relative_to(PLUGINS)): {"workbench.plugin"} for f in files
    }


def test_every_name_the_plugin_module_exports_resolves_and_is_documented() -> None:
    page = (ROOT / "docs" / "platforms.md").read_text(encoding="utf-8")
    assert plugin.__all__ == sorted(plugin.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n))
    for name in plugin.__all__:
        assert getattr(plugin, name) is not None, name
        assert f"`{name}`" in page, f"docs/platforms.md does not name {name}"
    with pytest.raises(AttributeError, match="no attribute 'Bench'"):
        plugin.Bench  # noqa: B018 - the lookup is the test


def test_a_platform_plugin_loads_the_plugin_module_without_the_ctx_layer() -> None:
    """A platform plugin pays for the ctx layer only when it names a capability class."""
    code = (
        "import sys, workbench.plugin as p; p.Profile, p.lint_manifest; print('workbench.ctx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_the_builtins_pass_the_load_time_check() -> None:
    """The same check a plugin meets at load: every built-in platform's rows and functions,
    every built-in capability's functions."""
    assert {name: plugin.check(prof) for name, prof in registry().items()} == {
        "notochord": [],
        "agent": [],
        "ekanos": [],
    }
    assert {s.impl: plugin.check(s) for s in [BENCH, *SPECS.values()]} == {
        s.impl: [] for s in [BENCH, *SPECS.values()]
    }


def test_check_refuses_what_is_not_a_plugin_with_a_coded_error() -> None:
    with pytest.raises(
        workbench.UsageError, match=r"check\(plugin\): give a Profile or a CapabilitySpec"
    ) as err:
        plugin.check({"name": "x"})  # type: ignore[arg-type]
    assert err.value.code == "E_USAGE" and err.value.details["field"] == "plugin"


# -- the rule, row by row ---------------------------------------------------------------------
class Greeter:
    """A capability class: each method a case of the rule."""

    def __init__(self, session: Any) -> None:
        self.s = session

    def greet(self, name: str, style: str = "plain") -> str:  # the row's parameters, and one more
        return f"hi {name}"

    def wrong(self, nam: str) -> str:  # the row says `name`
        return nam

    def extra(self, name: str, loud: bool) -> str:  # requires one the row lacks
        return name

    def none(self) -> str:  # takes none of the row's
        return ""

    def keyword(self, name: str, *, loud: bool) -> str:  # a required keyword: never passed
        return name

    def swapped(self, value: str, key: str) -> str:  # the row's two, in the other order
        return key

    def anonymous(self, a: str, b: str, /) -> str:  # positional-only: names are its own
        return a

    def spread(self, *args: Any) -> None:  # takes any arguments
        return None

    def spread_keyword(self, *args: Any, loud: bool) -> None:  # and one no call passes
        return None

    def insert(self, collection_name: str, doc: Any) -> None:  # a collection's bound first
        return None

    def call(self, tool: str, input: Any = None) -> None:  # ctx.tools.<name>(input)
        return None


def _problems(*rows: tuple[str, str, tuple[str, ...]], kind: str = "namespace") -> list[str]:
    caps = tuple(
        plugin.Capability(path, kind, "greeter", (plugin.Method(method, params),))
        for path, method, params in rows
    )
    prof = plugin.Profile(
        name="toy",
        title="toys",
        limits=plugin.Limits(),
        schema_rules=plugin.SchemaRules(),
        entry=plugin.EntryPoint(),
        capabilities=caps,
        load=lambda folder: None,  # type: ignore[arg-type,return-value]
        lint=lambda folder: [],
        grants_for=lambda manifest, tool: plugin.Grants(),
    )
    return profile_problems(prof, {"greeter": Greeter}.get)


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("greet", ("name",), None),
        ("greet", ("name", "style"), None),
        ("anonymous", ("from", "to"), None),
        ("spread", ("fields", "message"), None),
        ("wave", ("name",), "toy.greeter.wave(name): Greeter has no method 'wave'"),
        (
            "wrong",
            ("name",),
            "toy.greeter.wrong(nam): Greeter.wrong(nam) takes 'nam' where the row declares 'name'",
        ),
        (
            "extra",
            ("name",),
            "toy.greeter.extra(loud): Greeter.extra(name, loud) requires 'loud', which the row does not declare",
        ),
        ("none", ("name",), "toy.greeter.none(name): Greeter.none() takes no argument for 'name'"),
        (
            "greet",
            ("name", "style", "when"),
            "toy.greeter.greet(when): Greeter.greet(name, style) takes no argument",
        ),
        (
            "keyword",
            ("name",),
            "toy.greeter.keyword(loud): Greeter.keyword(name, loud) requires 'loud', which the row does not declare",
        ),
        (
            "spread_keyword",
            ("name",),
            "toy.greeter.spread_keyword(loud): Greeter.spread_keyword(args, loud) requires 'loud'",
        ),
        (
            "swapped",
            ("key", "value"),
            "toy.greeter.swapped(value): Greeter.swapped(value, key) takes 'value' where",
        ),
    ],
)
def test_a_row_is_checked_against_its_method_as_pluggy_checks_a_hookimpl(
    method: str, params: tuple[str, ...], expected: str | None
) -> None:
    found = _problems(("greeter", method, params))
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected), found


def test_a_collections_bound_name_and_a_dispatchs_tool_name_are_the_ctxs_to_name() -> None:
    assert _problems(("notes", "insert", ("collection", "doc")), kind="collection") == []
    assert _problems(("tools", "call", ()), kind="dispatch") == []


def test_a_row_naming_no_capability_is_a_problem() -> None:
    cap = plugin.Capability("nowhere", "namespace", "nowhere", (plugin.Method("go", ()),))
    prof = plugin.Profile(
        name="toy",
        title="toys",
        limits=plugin.Limits(),
        schema_rules=plugin.SchemaRules(),
        entry=plugin.EntryPoint(),
        capabilities=(cap,),
        load=lambda folder: None,  # type: ignore[arg-type,return-value]
        lint=lambda folder: [],
        grants_for=lambda manifest: plugin.Grants(),  # type: ignore[arg-type,misc]
    )
    assert plugin.check(prof) == [
        "toy.grants_for(tool): takes 1 argument(s), the workbench passes 2 (manifest, tool)",
        "toy.nowhere.go: no capability implements 'nowhere'",
    ]
    scaffolded = dataclasses.replace(
        prof,
        capabilities=(),
        grants_for=lambda manifest, tool: plugin.Grants(),
        scaffold=plugin.Scaffold(files=lambda: {}, call={}, asserts=()),  # type: ignore[arg-type]
    )
    assert plugin.check(scaffolded) == [
        "toy.scaffold.files(values): takes 0 argument(s), the workbench passes 1 (values)"
    ]


def test_a_capabilitys_functions_are_checked_against_what_the_workbench_passes() -> None:
    part = plugin.StatePart("clock", dump=lambda cx: {}, put=lambda cx, value: None)  # type: ignore[arg-type]
    spec = plugin.CapabilitySpec(
        impl="clock",
        title="ctx.clock",
        implementation=Greeter,
        state=(part,),
        views=(plugin.View("clock", fn=lambda: None),),
        actions=(plugin.Action("--tick", "N", "tick", lambda bench, values, when: None),),
        backend=lambda opening: object(),
    )
    assert plugin.check(spec) == [
        "clock.views.clock(bench): takes 0 argument(s), the workbench passes 1 (bench)",
        "clock.actions.--tick(when): requires 'when', which the workbench never passes",
        "clock.state.clock.put(bad): takes 2 argument(s), the workbench passes 3 (cx, value, bad)",
    ]
    not_a_class = plugin.CapabilitySpec(impl="x", title="x", implementation=Greeter(None))  # type: ignore[arg-type]
    assert plugin.check(not_a_class) == ["x.implementation: is a Greeter, not a class"]


# -- at load: a plugin with a problem is skipped, named; the bench opens ------------------------
GREETER = """
from workbench.plugin import Capability, CapabilitySpec, EntryPoint, Grants, Limits, Method, Profile, SchemaRules

class Greeter:
    def __init__(self, session):
        self.s = session

    def greet(self, {param}):
        return "hi"

SPEC = CapabilitySpec(impl="{name}", title="ctx.{name}", implementation=Greeter)
PROFILE = Profile(
    name="{name}",
    title="{name} gems",
    limits=Limits(),
    schema_rules=SchemaRules(),
    entry=EntryPoint(),
    capabilities=(Capability("{name}", "namespace", "{name}", (Method("{method}", ("name",)),)),),
    load=lambda folder: None,
    lint=lambda folder: [],
    grants_for=lambda manifest, tool: Grants(),
)
"""


def _greeter(site: Path, name: str, *, param: str = "name", method: str = "greet") -> None:
    """A distribution registering ctx.<name> (Greeter) and platform <name> whose row is
    `<name>.<method>(name)`."""
    info = site / f"gw_{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: gw_{name}\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[gem_workbench.capabilities]\n{name} = gw_{name}:SPEC\n\n"
        f"[gem_workbench.platforms]\n{name} = gw_{name}:PROFILE\n",
        encoding="utf-8",
    )
    (site / f"gw_{name}.py").write_text(
        GREETER.format(name=name, param=param, method=method), encoding="utf-8"
    )


LOAD = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import workbench
    from workbench import ctx, platforms

    out = {"names": platforms.names(), "capabilities": [s.impl for s in ctx.specs()][-3:]}
    with workbench.open(NOTES) as bench:
        out["call"] = bench.call("add_note", {"title": "hi"}).ok
out["warnings"] = sorted(
    (w.category.__name__, str(w.message)) for w in caught if w.category.__name__ == "PluginWarning"
)
print("RESULT" + json.dumps(out))
"""


def _load(site: Path, tmp_path: Path) -> dict[str, Any]:
    proc = run(LOAD.replace("NOTES", repr(str(NOTES))), site, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.split("RESULT", 1)[1])


def test_a_plugin_with_a_wrong_parameter_name_loads_with_a_warning_and_the_bench_opens(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _greeter(site, "wrongname", param="nam")
    out = _load(site, tmp_path)
    assert out["names"] == ["notochord", "agent", "ekanos"] and out["call"] is True
    assert out["warnings"] == [
        [
            "PluginWarning",
            "entry point 'wrongname' = 'gw_wrongname:PROFILE' (group gem_workbench.platforms): "
            "wrongname.wrongname.greet(nam): Greeter.greet(nam) takes 'nam' where the row declares 'name'; skipped",
        ]
    ]
    assert out["capabilities"][-1] == "wrongname"  # the capability itself is sound: registered


def test_a_plugin_whose_row_names_a_missing_method_loads_with_a_warning_and_the_bench_opens(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _greeter(site, "waver", method="wave")
    _greeter(site, "sound")  # beside it, a plugin without a problem is registered
    fake_dist(  # and one whose rows cannot even be read: skipped, never a traceback
        site,
        "gem_workbench.platforms",
        "gw_norows",
        "norows = gw_norows:PROFILE",
        """
        import dataclasses
        from workbench.platforms.notochord import PROFILE as NOTOCHORD
        PROFILE = dataclasses.replace(NOTOCHORD, name="norows", capabilities=None)
        """,
    )
    out = _load(site, tmp_path)
    assert out["names"] == ["notochord", "agent", "ekanos", "sound"] and out["call"] is True
    assert out["warnings"] == [
        [
            "PluginWarning",
            "entry point 'norows' = 'gw_norows:PROFILE' (group gem_workbench.platforms): could not be "
            "checked: TypeError: 'NoneType' object is not iterable; skipped",
        ],
        [
            "PluginWarning",
            "entry point 'waver' = 'gw_waver:PROFILE' (group gem_workbench.platforms): "
            "waver.waver.wave(name): Greeter has no method 'wave'; skipped",
        ],
    ]


def test_a_capability_plugin_with_a_problem_is_skipped_and_so_is_a_platform_naming_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    fake_dist(
        site,
        "gem_workbench.capabilities",
        "gw_badpart",
        "badpart = gw_badpart:SPEC",
        """
        from workbench.plugin import CapabilitySpec, StatePart
        SPEC = CapabilitySpec(
            impl="badpart",
            title="ctx.badpart",
            state=(StatePart("badpart", dump=lambda cx: {}, put=lambda cx, value: None),),
        )
        """,
    )
    fake_dist(
        site,
        "gem_workbench.platforms",
        "gw_usesit",
        "usesit = gw_usesit:PROFILE",
        """
        import dataclasses
        from workbench.plugin import Capability, Method
        from workbench.platforms.notochord import PROFILE as NOTOCHORD
        PROFILE = dataclasses.replace(
            NOTOCHORD, name="usesit", capabilities=(Capability("badpart", "namespace", "badpart", (Method("go", ()),)),)
        )
        """,
    )
    out = _load(site, tmp_path)
    assert out["names"] == ["notochord", "agent", "ekanos"] and out["call"] is True
    assert "badpart" not in out["capabilities"]
    assert [m for _, m in out["warnings"]] == [
        "entry point 'badpart' = 'gw_badpart:SPEC' (group gem_workbench.capabilities): "
        "badpart.state.badpart.put(bad): takes 2 argument(s), the workbench passes 3 (cx, value, bad); skipped",
        "entry point 'usesit' = 'gw_usesit:PROFILE' (group gem_workbench.platforms): "
        "usesit.badpart.go: no capability implements 'badpart'; skipped",
    ]


# -- the manifest lint every platform starts with ---------------------------------------------
def test_lint_manifest_reads_checks_and_collects_what_a_platform_adds(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "t.py").write_text("def handle(i, c): return 1\n", encoding="utf-8")
    (tmp_path / "tiny.json").write_text(
        json.dumps({"id": "tiny", "tool": [], "tools": [{"name": "t", "file": "tools/t.py"}]}),
        encoding="utf-8",
    )
    schema = {
        "type": "object",
        "required": ["id", "tools"],
        "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "tools": {"type": "array"}},
    }
    found = plugin.lint_manifest(tmp_path, schema=schema, file="tiny.json")
    assert found.raw is None and [(p["pointer"], p["message"]) for p in found.problems] == [
        ("/tool", "unknown key 'tool' (the keys here: id, tools)")
    ]
    schema["properties"]["tool"] = {"type": "array"}
    found = plugin.lint_manifest(tmp_path, schema=schema, file="tiny.json")
    assert found.raw["id"] == "tiny" and found.tools(schema_key="input", rules=plugin.SchemaRules()) == {
        "t": 0
    }
    found.bad("/id", "too tiny")
    os.symlink("/etc", tmp_path / "out")
    assert [(Path(p["file"]).name, p["pointer"], p["message"][:22]) for p in found.done()] == [
        ("tiny.json", "/id", "too tiny"),
        ("out", "", "symbolic link out lead"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [("[1, 2]", "manifest.json holds no JSON object"), ("{", "manifest.json is not valid JSON")],
)
def test_a_manifest_a_platform_reads_without_a_schema_is_an_object_or_a_problem(
    tmp_path: Path, text: str, message: str
) -> None:
    """A platform that checks the shape itself (gw_clock) gets an object or a problem: a list
    there was an AttributeError out of its lint."""
    (tmp_path / "manifest.json").write_text(text, encoding="utf-8")
    found = plugin.lint_manifest(tmp_path)
    assert found.raw is None and found.problems[0]["message"].startswith(message), found.problems


def test_a_manifest_linked_out_of_the_gem_is_a_problem_unread(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}", encoding="utf-8")
    gem = tmp_path / "gem"
    gem.mkdir()
    os.symlink(outside, gem / "fourth.json")
    found = plugin.lint_manifest(gem, file="fourth.json")
    assert found.raw is None
    assert found.problems[0]["message"] == "fourth.json is a link leading outside the gem folder"
