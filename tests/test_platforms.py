"""The platform seam (workbench.platforms): detection, the capability registry that both
runners' ctx are generated from, grants decided once, limits read from the profile."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench import GemLoadError
from workbench.platforms import KNOWN, Grants, Limits, detect, lint, profile
from workbench.platforms.notochord import PROFILE as NOTOCHORD
from workbench.plugin import check

BUILT = ["notochord", "agent"]  # profiles built so far (ekanos: its own issue)
EXAMPLE = Path(__file__).parent.parent / "notebooks" / "gems" / "notes"

# ctx names, walked the same way in both languages: an object's own keys, a collection's
# methods through collection(name); a leaf is a function or a value
PY_NAMES = """
def walk(obj, prefix, out):
    for name in dir(obj):
        v = getattr(obj, name)
        path = f"{prefix}.{name}" if prefix else name
        if callable(v) and name == "collection":
            walk(v("notes"), prefix, out)
        elif callable(v) or v is None or isinstance(v, (str, int, float)):
            out.append(path)
        else:
            walk(v, path, out)
    return out

def handle(input, ctx):
    return sorted(walk(ctx, "", []))
"""
JS_NAMES = """
function walk(obj, prefix, out) {
  for (const name of Object.keys(obj)) {
    const v = obj[name], path = prefix ? `${prefix}.${name}` : name;
    if (typeof v === "function" && name === "collection") walk(v("notes"), prefix, out);
    else if (typeof v === "function" || v === null || typeof v !== "object") out.push(path);
    else walk(v, path, out);
  }
  return out;
}
export async function handle(input, ctx) { return walk(ctx, "", []).sort(); }
export default handle;
"""


def names_gem(gem: GemBuilder, *, granted: bool, platform: str = "notochord") -> Path:
    if platform == "agent":
        gem.manifest.update(platform="agent", agent={"id": "a-1", "name": "A"})
        if not granted:
            gem.manifest["builtins"] = []
        for name, src, ext in (("py", PY_NAMES, "py"), ("js", JS_NAMES, "js")):
            gem.tool(name, src, ext=ext)
            gem.manifest["tools"][-1] = {"name": name, "file": f"tools/{name}.{ext}"}
        return gem.write()
    perms = {"email": {"read": True}, "http": {}} if granted else {}
    for name, src, ext in (("py", PY_NAMES, "py"), ("js", JS_NAMES, "js")):
        gem.tool(name, src, ext=ext, **({"permissions": perms} if granted else {}))
    gem.collections(notes=[])
    if granted:
        gem.manifest["permissions"] = perms
        gem.manifest["resources"] = [{"id": "model", "url": "https://x.example/m", "sha256": "0" * 64}]
    return gem.write()


def expected(prof: Any, grants: Grants) -> list[str]:
    """Every leaf path the registry gives a tool with `grants`."""
    out = []
    for cap in prof.present(grants):
        if cap.kind in ("value", "function"):
            out.append(cap.path)
        else:
            top = cap.path.rsplit(".", 1)[0] if cap.kind == "collection" else cap.path
            out.extend(
                f"{top}.{m}" if cap.kind == "namespace" else f"{cap.path}.{m}" for m in cap.method_names()
            )
    return sorted(out)


@pytest.mark.deno
@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("granted", [True, False], ids=["all-grants", "no-grants"])
def test_python_and_js_tools_see_the_same_ctx_names(
    name: str, granted: bool, gem: GemBuilder, opened: Callable
) -> None:
    # resources= is ctx.resources' option: Notochord's only
    resources = {"resources": {"model": b"x"}} if granted and name == "notochord" else {}
    bench = opened(names_gem(gem, granted=granted, platform=name), **resources)
    py, js = bench.call("py").raise_for_error().value, bench.call("js").raise_for_error().value
    assert py == js
    tool = bench.manifest.tools["py"]
    want = expected(bench.profile, bench.profile.grants(bench.manifest, tool))
    assert py == want
    if name == "notochord":
        assert ("email.listSince" in py) is granted and ("resources.path" in py) is granted
    else:
        assert ("tools.calculate" in py) is granted and "tools.py" in py and "audit" in py


@pytest.mark.parametrize("name", BUILT)
def test_registry_rows_name_real_implementations(name: str) -> None:
    fields = {f.name for f in dataclasses.fields(workbench.ctx.CallSession)}
    for cap in profile(name).capabilities:
        if cap.kind == "value":  # a session attribute, or one of the platform's call values
            assert cap.impl.startswith("values.") or cap.impl in fields, cap
    # every other row: the check each plugin meets at load (ctx/verify.py), the same function
    assert check(profile(name)) == []


def test_detect_picks_notochord_for_a_manifest_without_platform() -> None:
    assert detect(EXAMPLE) is NOTOCHORD
    assert workbench.open(EXAMPLE).profile is NOTOCHORD


def test_unknown_platform_is_E_MANIFEST_listing_the_known_ones(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1").manifest["platform"] = "gemini"
    root = gem.write()
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert err.value.code == "E_MANIFEST" and err.value.details["pointer"] == "/platform"
    assert all(repr(k) in err.value.message for k in KNOWN), err.value.message
    assert [p["pointer"] for p in lint(root)] == ["/platform"]


def test_a_manifest_saying_ekanos_is_told_where_an_integration_is_defined(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1").manifest["platform"] = "ekanos"
    with pytest.raises(GemLoadError, match="integration.ts") as err:
        workbench.open(gem.write())
    assert "defineIntegration" in err.value.message and err.value.details["pointer"] == "/platform"


def test_an_integration_folder_is_detected_as_ekanos(tmp_path: Path) -> None:
    (tmp_path / "integration.ts").write_text("export default {}\n")
    assert detect(tmp_path).name == "ekanos"


def test_platform_of_another_type_is_E_MANIFEST(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1").manifest["platform"] = ["notochord"]
    with pytest.raises(GemLoadError, match="/platform"):
        workbench.open(gem.write())


def test_every_denial_names_the_manifest_field_to_add(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1", permissions={"email": {"read": False}})
    bench = workbench.open(gem.write())
    grants = NOTOCHORD.grants(bench.manifest, bench.manifest.tools["t"])
    assert grants.granted == frozenset()
    for name in ("email", "http", "resources"):
        err = grants.denial(name)
        assert err.code == "E_PERM_DENIED" and "manifest.json" in err.message
        assert err.details["missing"] and all(m.startswith("/") for m in err.details["missing"])
        assert all(m in err.message for m in err.details["missing"])
    # decided once per (gem, tool): the same value on every call
    assert NOTOCHORD.grants(bench.manifest, bench.manifest.tools["t"]) is grants


def test_limits_come_from_the_profile_and_one_can_be_made_small(gem: GemBuilder, lang: str) -> None:
    """Miniflare's MAX_VALUE_SIZE_TEST idea: shrink one limit to test it with 11 bytes."""
    src = {
        "py": "def handle(i, ctx):\n    ctx.files.write('a.txt', 'x' * 11)\n",
        "js": "export default async (i, ctx) => ctx.files.write('a.txt', 'x'.repeat(11));\n",
    }
    gem.tool("w", src[lang], ext=lang)
    root = gem.write()
    with workbench.open(root) as bench:
        assert bench.limits is bench.profile.limits and bench.call("w").ok
    with workbench.open(root, limits=Limits(file_bytes=10)) as small:
        res = small.call("w")
        assert res.error.code == "E_TOO_LARGE" and "10" in res.error.message


def test_the_entry_point_is_the_profiles(gem: GemBuilder) -> None:
    gem.tool("py", "def run(i, c): return 1")
    gem.tool("js", "export function run() { return 1 }", ext="js")
    bench = workbench.open(gem.write())
    assert "no handle(input, ctx)" in bench.call("py").error.message
    js = bench.call("js").error
    assert "default or handle" in js.message and js.code == "E_TOOL_ERROR"
    bench.close()


def test_the_manifest_schema_is_the_notochord_profiles() -> None:
    from workbench.platforms.notochord import manifest_schema

    schema = manifest_schema()
    assert schema["properties"]["platform"]["enum"] == list(KNOWN)
    assert json.dumps(schema)  # shipped as data, loadable


STASH = {
    "py": """
kept = []

def handle(input, ctx):
    if not kept:
        kept.append(ctx)
        return "kept"
    try:
        kept[0].storage.kv.set("k", "v")
    except Exception as exc:
        return getattr(exc, "code", repr(exc))
    return "used"
""",
    "js": """
let kept;
export default async function (input, ctx) {
  if (!kept) { kept = ctx; return "kept"; }
  try { await kept.storage.kv.set("k", "v"); } catch (e) { return e.message.includes("ended") ? "E_STATE" : e.message; }
  return "used";
}
""",
}


def test_a_ctx_kept_past_its_call_is_refused(gem: GemBuilder, opened: Callable, lang: str) -> None:
    """A ctx stashed in module state answers no later call: its run folder and trace are
    gone (JS: refused at once, not left waiting for the timeout)."""
    gem.tool("t", STASH[lang], ext=lang)
    bench = opened(gem.write(), timeout=20)
    assert bench.call("t").value == "kept"
    res = bench.call("t")
    assert res.value == "E_STATE", res  # a wait would have ended the call with E_TIMEOUT
    assert bench.kv().empty


def test_a_missing_capability_is_explained_only_when_the_tool_uses_it(
    gem: GemBuilder, opened: Callable
) -> None:
    gem.tool("other", "export default async (i) => i.file.path;", ext="js")
    gem.tool("res", "export default async (i, ctx) => ctx.resources.path('m');", ext="js")
    bench = opened(gem.write())
    other, res = bench.call("other", {"file": None}).error, bench.call("res").error
    assert "ctx.resources is undefined" not in other.message and "missing" not in other.details
    assert "ctx.resources is undefined" in res.message and res.details["missing"] == ["/resources"]


def test_python_ctx_keeps_its_snake_case_alias_and_copies(gem: GemBuilder) -> None:
    gem.tool(
        "t",
        """
import copy

def handle(input, ctx):
    return [ctx.idempotency_key == ctx.idempotencyKey, "idempotency_key" in dir(ctx),
            repr(copy.copy(ctx)).startswith("<ctx"), repr(copy.copy(ctx.files)).startswith("<ctx")]
""",
    )
    with workbench.open(gem.write()) as bench:
        assert bench.call("t").value == [True, False, True, True]


def test_http_fetch_takes_method_as_a_keyword_in_python(gem: GemBuilder) -> None:
    gem.tool(
        "t",
        "def handle(i, ctx):\n    return ctx.http.fetch('https://x.example/', method='POST').status\n",
        permissions={"http": {}},
    )
    gem.manifest["permissions"] = {"http": {}}
    handlers = [{"match": "https://x.example/", "method": "POST", "respond": {"status": 201}}]
    with workbench.open(gem.write(), http=handlers) as bench:
        assert bench.call("t").value == 201


def test_detect_does_not_read_a_manifest_linked_from_outside(gem: GemBuilder, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"platform": "SECRET-TOKEN"}))
    root = gem.tool("t", "def handle(i, c): return 1").write()
    (root / "manifest.json").unlink()
    (root / "manifest.json").symlink_to(secret)
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert "SECRET" not in err.value.message and "outside" in err.value.message


def test_a_huge_platform_value_gives_a_short_message(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1").manifest["platform"] = "x" * 1_000_000
    with pytest.raises(GemLoadError) as err:
        workbench.open(gem.write())
    assert len(err.value.message) < 1_000


def test_the_notochord_loader_loads_only_notochord_gems(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(i, c): return 1").manifest["platform"] = "agent"
    with pytest.raises(GemLoadError, match="not a Notochord gem"):
        NOTOCHORD.load(gem.write())


INSPECT_TOOL = """
import inspect, pydoc
from IPython.core.oinspect import Inspector

{kind} handle(input, ctx):
    ins, out = Inspector(theme_name="nocolor"), {{}}
    for name, f in [("files.read", ctx.files.read), ("storage.kv.set", ctx.storage.kv.set),
                    ("extract", ctx.extract), ("insert", ctx.data.collection("notes").insert)]:
        info = ins.info(f)
        out[name] = {{"signature": str(inspect.signature(f)), "definition": info["definition"],
                     "docstring": info["docstring"], "help": pydoc.render_doc(f, renderer=pydoc.plaintext)}}
    return out
"""


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_python_ctx_methods_show_their_signature_and_doc_to_inspect_and_help(
    gem: GemBuilder, kind: str
) -> None:
    """Jupyter's inspect (IPython's Inspector, what a kernel's inspect_request answers with)
    and help() show a ctx method's parameters and what it is, not `partial(*args, **kwargs)`;
    the collection's bound name is not a parameter."""
    gem.tool("t", INSPECT_TOOL.format(kind=kind)).collections(notes=[])
    with workbench.open(gem.write()) as bench:
        out = bench.call("t").value
    read = out["files.read"]
    assert read["signature"].startswith("(path: 'str', options:") and "*args" not in read["signature"]
    assert "path" in read["definition"] and "encoding" in read["definition"] and "F1" in read["docstring"]
    assert "ctx.files.read(path" in read["help"]
    assert out["storage.kv.set"]["signature"].startswith("(key: 'str', value")
    assert out["extract"]["docstring"].startswith("ctx.extract(path")
    insert = out["insert"]
    assert insert["signature"].startswith("(doc") and "name" not in insert["signature"]
    assert insert["docstring"].startswith("ctx.data.collection(name).insert(doc")
