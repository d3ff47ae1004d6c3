"""The ctx declarations for tool authors (workbench/types): generated from the capability
registries, never drifting from them, and wired into `check --typecheck` so `deno check` (and
mypy, for Python tools) catches a wrong ctx method or argument."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

import workbench.types as wt
from workbench.platforms import profile
from workbench.platforms.base import Capability, Method
from workbench.types import _generate as gen
from workbench.types._schema import to_py, to_ts

TYPES = Path(wt.__file__).parent
PLATFORMS = ("notochord", "agent", "ekanos")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))  # DENO_DIR and state


# -- generated from the registry ------------------------------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
def test_declarations_are_what_the_registry_generates(platform):
    """Regenerate and compare: `python -m workbench.types` must have been run after any change."""
    for fname, text in gen.render(platform).items():
        shipped = (TYPES / fname).read_text(encoding="utf-8")
        if fname.endswith(".py"):  # written through ruff format: compare what the code says
            assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(shipped)), (
                f"workbench/types/{fname} is stale: run `python -m workbench.types`"
            )
        else:
            assert text == shipped, f"workbench/types/{fname} is stale: run `python -m workbench.types`"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_registry_name_is_declared(platform):
    """Each method, value and function of the profile's ctx is in both declarations."""
    ts = (TYPES / f"{platform}.d.ts").read_text(encoding="utf-8")
    py = (TYPES / f"{platform}.py").read_text(encoding="utf-8")
    for cap in profile(platform).capabilities:
        if cap.kind == "value":
            assert re.search(rf"readonly {cap.path}: ", ts), cap.path
            assert re.search(rf"^\s+{cap.path}: ", py, re.M), cap.path
            continue
        if cap.kind == "dispatch":  # ctx.tools: the built-ins by name, the gem's own by its Inputs
            from workbench.platforms.agent.manifest import BUILTINS

            for name in BUILTINS:
                assert re.search(rf"\b{name}\(input: ", ts) and f"def {name}(self, input: " in py, name
            continue
        for m in cap.methods:
            name = cap.path if cap.kind == "function" else m.name
            assert re.search(rf"\b{name}(<.*>)?\(", ts), f"{cap.path}.{m.name} not in {platform}.d.ts"
            assert re.search(rf"def {name}\(\s*self", py), f"{cap.path}.{m.name} not in {platform}.py"
    for cap in profile(platform).capabilities:  # Python aliases (idempotency_key) too
        if cap.python_alias:
            assert re.search(rf"^\s+{cap.python_alias}: ", py, re.M)


def test_a_registry_method_without_a_signature_is_refused():
    """A capability row added without its types is an error naming it, not an `any`."""
    prof = profile("notochord")
    files = next(c for c in prof.capabilities if c.path == "files")
    grown = dataclasses.replace(files, methods=(*files.methods, Method("copy", ("from", "to"))))
    with pytest.raises(gen.DriftError, match=r"files\.copy: a registry method with no signature"):
        gen.sig(grown, grown.methods[-1])
    renamed = Capability("storage.kv", "namespace", "kv", (Method("get", ("name",)),))
    with pytest.raises(gen.DriftError, match=r"storage\.kv\.get: the registry's parameters are \('name',\)"):
        gen.sig(renamed, renamed.methods[0])


def test_precise_types_the_brief_names():
    nd = (TYPES / "notochord.d.ts").read_text(encoding="utf-8")
    assert "read(path: string, options?: ReadOptions): Promise<string>;" in nd
    assert "get(key: string): Promise<string | null>;" in nd  # D2 storage.kv.get
    assert "set(key: string, value: string): Promise<void>;" in nd
    assert "listSince(options?: ListSinceOptions): Promise<{ messages: Envelope[]; cursor: number }>;" in nd
    assert "fetch(url: string | URL, init?: FetchInit): Promise<FetchResponse>;" in nd
    assert "readonly credentialDenied?: { reason: string; host: string };" in nd
    ek = (TYPES / "ekanos.d.ts").read_text(encoding="utf-8")
    assert "get<T = any>(key: string): Promise<StoredValue<T> | null>;" in ek
    assert "fetch(url: string | URL, init?: RequestInit): Promise<Response>;" in ek
    assert "debug(fields: Record<string, unknown> | string, message?: string): void;" in ek  # void codec
    ag = (TYPES / "agent.d.ts").read_text(encoding="utf-8")
    assert "calculate(input: { expression: string }): Promise<{ result: number } | ErrorEnvelope>;" in ag
    assert "readonly powerUserId: string | null;" in ag


def test_schema_to_types():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b-c": {"enum": ["x", "y"]}, "t": {"type": "array"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert to_ts(schema) == '{ a: number; "b-c"?: "x" | "y"; t?: unknown[] }'
    assert to_ts({"type": "object"}) == "{ [key: string]: unknown }"
    assert to_py({"enum": ["x", 1]}) == "Literal['x', 1]"
    deep: dict = {}
    node = deep
    for _ in range(500):  # hostile nesting is cut, not recursed into
        node["items"] = {"type": "array"}
        node = node["items"]
    assert "unknown" in to_ts({"type": "array", **deep})


def test_python_protocols_catch_a_wrong_method_with_mypy(tmp_path, mypy_cache):
    from mypy import api

    good = tmp_path / "good.py"
    good.write_text(
        "from __future__ import annotations\n"
        "from workbench.types.notochord import AsyncCtx, Ctx\n"
        "def handle(input: dict, ctx: Ctx) -> str | None:\n"
        "    ctx.storage.kv.set('k', 'v')\n"
        "    return ctx.storage.kv.get('k')\n"
        "async def ahandle(input: dict, ctx: AsyncCtx) -> list[str]:\n"
        "    page = await ctx.email.listSince(limit=5)\n"
        "    return [m['subject'] for m in page['messages']]\n"
    )
    out, err, status = api.run([str(good), mypy_cache("plain")])
    assert status == 0, out + err
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from workbench.types.notochord import Ctx\n"
        "def handle(input: dict, ctx: Ctx) -> None:\n"
        "    ctx.files.readFile('x')\n"
        "    ctx.storage.kv.set(1, 2)\n"
    )
    out, _, status = api.run([str(bad), mypy_cache("plain")])
    assert status == 1
    assert '"Files" has no attribute "readFile"' in out
    assert 'Argument 1 to "set" of "KV" has incompatible type "int"; expected "str"' in out


# -- the gem's .gem-workbench/ ----------------------------------------------------------------------


def test_gem_files_type_each_tools_input_from_the_manifest():
    from workbench.platforms import load

    files = wt.gem_files(load("notebooks/gems/agent-research"))
    assert set(files) == {"agent.d.ts", "gem.d.ts", "manifest.schema.json"}
    gem = files["gem.d.ts"]
    assert '"research": { email: string; topic: string; domain: string };' in gem
    assert (
        'export type Ctx = PlatformCtx<Inputs, "web_search" | "send_email" | "calculate" | "surface_file">;'
        in gem
    )
    schema = json.loads(files["manifest.schema.json"])
    assert "\\Z" not in json.dumps(schema)  # ECMAScript patterns for editors
    assert set(wt.gem_files(load("notebooks/gems/acme-payments"))) == {"ekanos.d.ts"}


def test_manifest_schemas_have_an_id_that_does_not_pretend_to_be_a_url():
    ids = set()
    for platform in ("notochord", "agent"):
        schema = json.loads(Path(f"workbench/platforms/{platform}/manifest.schema.json").read_text())
        assert schema["$id"] == f"urn:gem-workbench:schema:{platform}:manifest"
        assert schema["properties"]["$schema"] == {"type": "string"}  # a manifest may say $schema
        ids.add(schema["$id"])
    assert len(ids) == 2


# -- deno check with the shipped types ----------------------------------------------------------------

deno = pytest.mark.deno


def _new(tmp_path: Path, name: str, platform: str, lang: str) -> Path:
    from workbench.scaffold._create import create

    return create(name, platform=platform, lang=lang, parent=tmp_path)


def _typecheck(folder: Path) -> str | None:
    from workbench.platforms import load, profile
    from workbench.runners.deno import typecheck

    m = load(folder)
    ts = [t.file for t in m.tools.values() if t.language == "typescript"]
    return typecheck(
        ts, deno_dir=folder.parent / "deno", manifest=m, import_map=profile(m.platform).import_map
    )


@deno
@pytest.mark.parametrize("platform", PLATFORMS)
def test_shipped_declarations_compile(platform, tmp_path):
    from workbench.runners.deno import typecheck

    copy = tmp_path / f"{platform}.d.ts"
    shutil.copy(TYPES / copy.name, copy)
    assert typecheck([copy], deno_dir=tmp_path / "deno") is None


@deno
def test_deno_check_catches_a_wrong_ctx_method_and_argument_via_shipped_types(tmp_path):
    """The example of the issue: ctx.files.readFile and ctx.storage.kv.set(1, 2) fail with the
    compiler's own messages, even when the gem's .gem-workbench/ copy is missing or stale."""
    gem = _new(tmp_path, "typed", "notochord", "ts")
    assert _typecheck(gem) is None
    tool = gem / "tools" / "hello.ts"
    src = tool.read_text()
    src = src.replace(
        'ctx.files.read("workspace:welcome.txt")', 'ctx.files.readFile("workspace:welcome.txt")'
    )
    src = src.replace('ctx.storage.kv.set("greetings", String(count))', "ctx.storage.kv.set(1, 2)")
    tool.write_text(src)
    report = _typecheck(gem)
    assert report is not None
    assert "TS2339 [ERROR]: Property 'readFile' does not exist on type 'Files'." in report
    assert "Argument of type 'number' is not assignable to parameter of type 'string'." in report
    assert "tools/hello.ts:" in report
    # a stale copy that "allows" readFile cannot hide the error: the installed types are used
    stale = gem / ".gem-workbench" / "notochord.d.ts"
    stale.write_text(
        stale.read_text().replace(
            "export interface Files {", "export interface Files {\n  readFile(p: string): Promise<string>;"
        )
    )
    assert "Property 'readFile' does not exist" in (_typecheck(gem) or "")
    shutil.rmtree(gem / ".gem-workbench")  # nor does a missing one break the check
    assert "Property 'readFile' does not exist" in (_typecheck(gem) or "")


@deno
def test_check_typecheck_cli_reports_the_compiler_message(tmp_path, capsys):
    from workbench.cli import main

    gem = _new(tmp_path, "cli-typed", "agent", "ts")
    tool = gem / "tools" / "hello.ts"
    tool.write_text(tool.read_text().replace("ctx.tools.calculate(", "ctx.tools.calculator("))
    assert main(["check", str(gem), "--typecheck"]) == 1
    err = capsys.readouterr().err
    assert "Property 'calculator' does not exist" in err


@deno
def test_js_tools_with_ts_check_are_checked_too(tmp_path):
    gem = _new(tmp_path, "js-typed", "notochord", "js")
    assert _typecheck(gem) is None
    tool = gem / "tools" / "hello.js"
    tool.write_text(tool.read_text().replace("ctx.files.stat(", "ctx.files.exists("))
    assert "Property 'exists' does not exist on type 'Files'" in (_typecheck(gem) or "")


@deno
def test_ekanos_declarations_match_the_sdk_served_to_the_sandbox(tmp_path):
    """ekanos.d.ts's @ekanos/sdk (ctx from the registry, the rest lifted) and the SDK's own
    types are assignable both ways, so an editor and the sandbox agree."""
    from workbench.platforms.ekanos.loader import SDK
    from workbench.runners.deno import typecheck

    probe = tmp_path / "probe.ts"
    probe.write_text(
        f'/// <reference types="{(TYPES / "ekanos.d.ts").as_uri()}" />\n'
        'import type * as Gen from "@ekanos/sdk";\n'
        'import type * as GenT from "@ekanos/sdk/testing";\n'
        f'import type * as Real from "{(SDK / "index.ts").as_uri()}";\n'
        f'import type * as RealT from "{(SDK / "testing.ts").as_uri()}";\n'
        "declare const g: Gen.IntegrationContext;\n"
        "declare const r: Real.IntegrationContext;\n"
        "export const a: Real.IntegrationContext = g;\n"
        "export const b: Gen.IntegrationContext = r;\n"
        "declare const gd: Gen.IntegrationDefinition;\n"
        "export const c: Real.IntegrationDefinition = gd;\n"
        "declare const gm: GenT.MockContext;\n"
        "export const d: RealT.MockContext = gm;\n"
    )
    assert typecheck([probe], deno_dir=tmp_path / "deno") is None


@deno
def test_ekanos_typecheck_uses_the_sdk_import_map(tmp_path):
    gem = _new(tmp_path, "ek-typed", "ekanos", "ts")
    assert _typecheck(gem) is None
    src = gem / "integration.ts"
    src.write_text(
        src.read_text().replace(
            "ctx.storage.account.get<{ count: number }>('greetings')", "ctx.storage.account.get(7)"
        )
    )
    report = _typecheck(gem) or ""
    assert "Argument of type 'number' is not assignable to parameter of type 'string'." in report
