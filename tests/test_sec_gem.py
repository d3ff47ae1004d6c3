"""Red team of gem loading and input checking: SEC6 ($ref stays inside the schema, N8 wherever
a ref reaches), SEC7 (open() and call() never raise for hostile data), SEC2 (manifest values
that become paths stay inside their folder).

Cases that hang, recurse without bound or block on today's code run in a child process with a
timeout and a memory cap, so a regression fails quickly instead of stalling the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.cli import main as cli_main
from workbench.gem.folder import MAX_JSON_BYTES as MAX_MANIFEST_BYTES
from workbench.gem.schema import MAX_VIOLATIONS, InputValidator, check_input_schema
from workbench.platforms import lint
from workbench.platforms.notochord import manifest_schema

ECHO = "def handle(input, ctx):\n    return {'got': input}\n"
EVIL = "^(a+)+$"  # catastrophic backtracking on "aaaa…!"
EVIL_INPUT = "a" * 40 + "!"  # ~2^40 steps for re; seconds for nothing


def isolated(code: str, *, timeout: float = 30, memory_mb: int = 1500) -> str:
    """Run `code` in a child Python (address space capped), return its stdout; fail the test
    if it runs over `timeout` (today's tree: a hang) or dies."""
    import resource

    def cap() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=cap,
            cwd=Path(__file__).parent,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout} s (a hang)")
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def python_steps(fn: Callable[[], Any]) -> int:
    """How many Python calls, lines and returns `fn()` runs on this thread (sys.settrace
    events): work counted, the same on any machine, where a stopwatch measures the machine.
    (Work inside one C function, e.g. a `list.index`, counts as one step.)"""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return tracer

    before = sys.gettrace()  # (a coverage tool's, if any: given back)
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(before)
    return count


def unblocking(fifo: Path, fn: Any, timeout: float = 10) -> Any:
    """fn() in a thread; if it is still blocked on `fifo` after `timeout` (today's tree: a
    blocking open), open the FIFO's other end so the thread ends, then fail the test."""
    import threading

    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 — handed to the test thread
            out["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for the blocked reader
        th.join(5)
        pytest.fail(f"blocked on the FIFO {fifo.name} for {timeout} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def load_error(root: Path) -> workbench.GemLoadError:
    """The GemLoadError workbench.open raises for `root` (any other outcome fails)."""
    with pytest.raises(workbench.GemLoadError) as ei:
        workbench.open(root).close()
    assert ei.value.code == "E_MANIFEST"
    return ei.value


def pointers(err: workbench.GemLoadError) -> list[str]:
    return [p["pointer"] for p in err.details.get("problems", [err.details])]


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))


# -- SEC6: refs resolve inside the schema; N8 wherever a ref reaches ------------------------

REF_BYPASSES = {
    "$defs": (
        {"properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string", "pattern": EVIL}}},
        "/$defs/x/pattern",
    ),
    "nested $defs": (
        {
            "properties": {"a": {"$ref": "#/$defs/o/$defs/i"}},
            "$defs": {"o": {"$defs": {"i": {"pattern": EVIL}}}},
        },
        "/$defs/o/$defs/i/pattern",
    ),
    "definitions": (
        {"properties": {"a": {"$ref": "#/definitions/i"}}, "definitions": {"i": {"pattern": EVIL}}},
        "/definitions/i/pattern",
    ),
    "inside not": (
        {
            "properties": {
                "a": {"not": {"type": "null", "pattern": EVIL}},
                "b": {"$ref": "#/properties/a/not"},
            }
        },
        "/properties/a/not/pattern",
    ),
    "unknown keyword": (
        {
            "properties": {"a": {"$ref": "#/x-anything/deep"}},
            "x-anything": {"deep": {"type": "string", "pattern": EVIL}},
        },
        "/x-anything/deep/pattern",
    ),
    "next to description": (
        {"description": "d", "x-doc": {"pattern": EVIL}, "properties": {"a": {"$ref": "#/x-doc"}}},
        "/x-doc/pattern",
    ),
    "a data keyword": (
        {"const": None, "default": {"uniqueItems": True}, "properties": {"a": {"$ref": "#/default"}}},
        "/default/uniqueItems",
    ),
    "the properties map": (
        {"properties": {"uniqueItems": True, "a": {"$ref": "#/properties"}}},
        "/properties/uniqueItems",
    ),
    "patternProperties": (
        {"properties": {"a": {"$ref": "#/x"}}, "x": {"patternProperties": {EVIL: {}}}},
        "/x/patternProperties",
    ),
    "escaped pointer": (
        {"properties": {"a": {"$ref": "#/x~1y/a%20b"}}, "x/y": {"a b": {"pattern": EVIL}}},
        "/x~1y/a b/pattern",
    ),
    "$dynamicRef": (
        {"properties": {"a": {"$dynamicRef": "#m"}}, "x": {"$dynamicAnchor": "m", "pattern": EVIL}},
        "/x/pattern",
    ),
    "$anchor": (
        {"properties": {"a": {"$ref": "#h"}}, "$defs": {"h": {"$anchor": "h", "uniqueItems": True}}},
        "/$defs/h/uniqueItems",
    ),
    "$id": (
        {
            "$id": "https://gem.example/s",
            "properties": {"a": {"$ref": "inner.json"}},
            "$defs": {"i": {"$id": "inner.json", "pattern": EVIL}},
        },
        "/$defs/i/pattern",
    ),
}


@pytest.mark.parametrize("name", list(REF_BYPASSES))
def test_SEC6_pattern_through_ref_rejected_at_load(gem: GemBuilder, name: str) -> None:
    schema, where = REF_BYPASSES[name]
    gem.tool("t", ECHO, schema={"type": "object", **schema})
    err = load_error(gem.write())
    assert f"/tools/0/inputSchema{where}" in pointers(err), err.message
    assert "not supported by the platform" in err.message


def test_SEC6_property_named_like_a_keyword_is_fine_without_a_ref(gem: GemBuilder) -> None:
    gem.tool(
        "t",
        ECHO,
        schema={
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "uniqueItems": True},
            "default": {"pattern": "x"},
            "x-doc": {"uniqueItems": True},
        },
    )
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", {"pattern": "(a+)+"}).ok


@pytest.mark.parametrize(
    "ref",
    [
        "https://127.0.0.1:9/schema.json",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2020-12/schema",
        "urn:example:evil",
        "FILE",
        "other.json",
        "#/properties/missing",
        "#nowhere",
        "#/description",
        "http://[::1",
    ],
)
def test_SEC6_ref_outside_the_schema_is_a_load_error(gem: GemBuilder, tmp_path: Path, ref: str) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"type": "integer"}))
    ref = outside.as_uri() if ref == "FILE" else ref
    gem.tool("t", ECHO, schema={"type": "object", "description": "d", "properties": {"a": {"$ref": ref}}})
    err = load_error(gem.write())
    assert pointers(err) == ["/tools/0/inputSchema/properties/a/$ref"], err.message


def test_SEC6_file_ref_is_never_fetched_at_call(tmp_path: Path) -> None:
    # The validator itself (defence in depth, whatever the load check says) fetches nothing
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"type": "integer"}))
    problems = InputValidator({"$ref": outside.as_uri()}).violations("not an integer")
    assert problems and all("not of type" not in p["message"] for p in problems)


def test_SEC6_validator_never_runs_a_forbidden_regex() -> None:
    # Even on a schema that skipped the load check: pattern/patternProperties/uniqueItems are
    # inert (a pattern, where allowed, runs on RE2, linear). Python's backtracking `re` takes
    # minutes on EVIL_INPUT: no stopwatch, the child records every pattern `re` is asked to
    # compile, and refuses EVIL at once (so the check ends either way, and says it was tried)
    out = isolated(
        f"""
        import json, re
        asked, compile = [], re._compile

        def recording(pattern, flags):
            if {EVIL!r} in str(pattern):
                asked.append(str(pattern))
                raise RuntimeError("the forbidden pattern reached Python's re")
            return compile(pattern, flags)

        re.purge()
        re._compile = recording
        from workbench.gem.schema import InputValidator
        v = InputValidator({{"$ref": "#/$defs/x", "$defs": {{"x": {{"pattern": {EVIL!r}}}}}}})
        found = [v.violations({EVIL_INPUT!r}), v.violations({{"{EVIL_INPUT}": 1}})]
        hooked = False
        try:  # the hook is the one `re` uses
            re.search({EVIL!r}, "a")
        except RuntimeError:
            hooked = True
        print(json.dumps({{"asked": asked, "found": found, "hooked": hooked}}))
    """,
        timeout=20,
    )
    got = json.loads(out)
    assert got["hooked"] and got["asked"] == [EVIL], got  # the hook sees what `re` compiles…
    assert got["found"][1] == [], got  # (a pattern applies to strings only)
    assert got["found"][0] and "RuntimeError" not in json.dumps(got["found"]), got  # …not the check


@pytest.mark.parametrize(
    "schema,where",
    [
        ({"$ref": "#"}, "/$ref"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            "/$defs/b/allOf/0/$ref",
        ),
        ({"anyOf": [{"not": {"$ref": "#"}}]}, "/anyOf/0/not/$ref"),
        (
            {"$defs": {"x": {"$dynamicAnchor": "m", "$dynamicRef": "#m"}}, "$ref": "#/$defs/x"},
            "/$defs/x/$dynamicRef",
        ),
    ],
)
def test_SEC6_ref_cycle_without_progress_is_a_load_error(gem: GemBuilder, schema: dict, where: str) -> None:
    gem.tool("t", ECHO, schema={"type": "object", **schema})
    err = load_error(gem.write())
    assert f"/tools/0/inputSchema{where}" in pointers(err) and "cycle" in err.message


def test_SEC6_recursive_schema_through_properties_loads_and_checks_deep_input(gem: GemBuilder) -> None:
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
    }
    gem.tool("t", ECHO, schema=tree)
    value: dict[str, Any] = {"name": "leaf"}
    for _ in range(60):
        value = {"name": "n", "kids": [value]}
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", value).ok
        bad = bench.call("t", {"kids": [{"kids": [{"name": 3}]}]})
        assert bad.error.code == "E_SCHEMA" and bad.error.details["field"] == "/kids/0/kids/0/name"


@pytest.mark.parametrize(
    "where,dialect",
    [
        ("/properties/a", "http://json-schema.org/draft-07/schema#"),
        ("/properties/a", "https://json-schema.org/draft/2020-12/schema"),
        ("", "http://json-schema.org/draft-04/schema#"),
        ("/default", "http://json-schema.org/draft-07/schema#"),
    ],
)
def test_SEC6_other_dialects_are_a_load_error(gem: GemBuilder, where: str, dialect: str) -> None:
    # jsonschema swaps in another draft's keyword set (and thus N8's regexes) wherever a
    # `$schema` sits, a `$ref` target included
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "default": {"type": "string"},
    }
    node = schema
    for part in where.split("/")[1:]:
        node = node[part]
    node["$schema"] = dialect
    gem.tool("t", ECHO, schema=schema)
    assert f"/tools/0/inputSchema{where}/$schema" in pointers(load_error(gem.write()))


def test_SEC6_root_dialect_2020_12_is_fine(gem: GemBuilder) -> None:
    gem.tool(
        "t",
        ECHO,
        schema={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"a": {"type": "integer"}},
        },
    )
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", {"a": 1}).ok
        assert bench.call("t", {"a": "x"}).error.code == "E_SCHEMA"


def test_SEC6_schema_nested_100000_levels_is_E_MANIFEST(gem: GemBuilder) -> None:
    gem.tool("t", ECHO, schema="@@DEEP@@")  # type: ignore[arg-type]
    root = gem.write()
    deep = '{"not":' * 100_000 + "{}" + "}" * 100_000
    text = (root / "manifest.json").read_text().replace('"@@DEEP@@"', deep)
    (root / "manifest.json").write_text(text)
    err = load_error(root)
    assert "nested deeper than" in err.message


def test_SEC6_schema_nested_within_the_bound_still_checks(gem: GemBuilder) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(58):
        schema = {"type": "array", "items": schema}
    gem.tool("t", ECHO, schema={"type": "object", "properties": {"a": schema}})
    value: Any = "x"
    for _ in range(58):
        value = [value]
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", {"a": value}).ok


# -- SEC7: calls: every hostile input is a coded error ---------------------------------------


@pytest.fixture
def echo(gem: GemBuilder):
    gem.tool("echo", ECHO, schema={"type": "object"})
    with workbench.open(gem.write()) as bench:
        yield bench


def test_SEC7_input_nested_100000_deep_is_E_SCHEMA_naming_the_depth_limit(echo) -> None:
    value: Any = {}
    for _ in range(100_000):
        value = {"a": value}
    res = echo.call("echo", value)
    assert res.error.code == "E_SCHEMA"
    assert res.error.details["limit"] == 200 and "200 levels" in res.error.message
    assert res.error.details["field"].startswith("/a/a/a")


def test_SEC7_input_depth_limit_is_exact(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(input, ctx):\n    return 'ran'\n")
    value: Any = "x"
    for _ in range(200):
        value = [value]
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", {"v": value[0]}).value == "ran"  # 200 levels in all
        res = bench.call("t", {"v": value})  # 201
    assert res.error.code == "E_SCHEMA" and res.error.details["limit"] == 200


def test_SEC7_input_cycle_is_E_SCHEMA(echo) -> None:
    loop: list[Any] = []
    loop.append({"again": loop})
    res = echo.call("echo", {"x": loop})
    assert res.error.code == "E_SCHEMA" and "cycle" in res.error.message


@pytest.mark.parametrize("value", [{"title": "ok \ud800"}, {"list": ["fine", "\udfff"]}, {"k\udc00": 1}])
def test_SEC7_lone_surrogate_in_input_reaches_the_tool(echo, value: Any) -> None:
    # Decision: the platform's JSON carries "\ud800" escapes into JS strings, so the tool gets
    # them (ctx decides what a file name or text may hold: test_files' F4/F9 tests)
    res = echo.call("echo", value)
    assert res.ok and res.value == {"got": value}


SURROGATE_TOOLS = {
    "py": """
from workbench import WorkbenchError

def handle(input, ctx):
    s = input["s"]
    try:
        ctx.storage.kv.set("k", s)
        stored = ctx.storage.kv.get("k")
    except WorkbenchError as e:
        stored = e.code
    ctx.files.write("out.txt", s)
    return {"got": input, "units": [ord(c) for c in s], "stored": stored, "file": ctx.files.read("out.txt")}
""",
    "js": """
export default async function (input, ctx) {
  const s = input.s;
  let stored;
  try { await ctx.storage.kv.set("k", s); stored = await ctx.storage.kv.get("k"); } catch (e) { stored = e.code; }
  await ctx.files.write("out.txt", s);
  const units = [];
  for (let i = 0; i < s.length; i++) units.push(s.charCodeAt(i));
  return { got: input, units, stored, file: await ctx.files.read("out.txt") };
}
""",
}


def test_SEC7_lone_surrogate_in_input_reaches_a_js_or_python_tool_alike(
    gem: GemBuilder, open_bench: Callable[..., workbench.Bench], lang: str
) -> None:
    """JSON carries a lone surrogate as an escape, and JSON.parse makes it one UTF-16 unit: a
    JS tool gets that unit as a Python tool gets the code point, on mock and real providers;
    what ctx stores of it is the same for both. Before: bench.call raised UnicodeEncodeError
    for a JS tool (the input could not be sent to the sandbox as UTF-8)."""
    gem.tool("t", SURROGATE_TOOLS[lang], ext=lang)
    bench = open_bench(gem)
    value = {"s": "x\ud800y", "k\udc00": ["\udfff"]}
    res = bench.call("t", value)
    assert res.ok, res.error
    assert res.value == {
        "got": value,
        "units": [0x78, 0xD800, 0x79],
        "stored": "x\ufffdy",  # storage keeps Unicode text: the lone half becomes U+FFFD
        "file": "x\ufffdy",  # written as TextEncoder writes it
    }
    res._repr_html_().encode("utf-8")  # the result's display is printable
    bench.calls()
    json.dumps(res.value)


@pytest.mark.parametrize("value,field", [({"n": "\ud800"}, "/n"), ({"n": 1, "k\udc00": 1}, "/k\\udc00")])
def test_SEC7_lone_surrogate_in_a_violation_is_named_printably(
    gem: GemBuilder, value: Any, field: str
) -> None:
    gem.tool(
        "t",
        ECHO,
        schema={"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
    )
    with workbench.open(gem.write()) as bench:
        err = bench.call("t", value).error
    assert err.code == "E_SCHEMA" and err.details["field"] == field
    err.message.encode("utf-8")  # printable: a traceback in print() is not an error report
    json.dumps(err.to_dict(), ensure_ascii=False).encode("utf-8")


def test_SEC7_paired_surrogates_are_fine(echo) -> None:
    assert echo.call("echo", {"t": "emoji 😀 \U0001f600"}).ok


def test_SEC7_number_the_validator_cannot_handle_is_E_SCHEMA(gem: GemBuilder) -> None:
    gem.tool("t", ECHO, schema={"type": "object", "properties": {"n": {"multipleOf": 0.5}}})
    with workbench.open(gem.write()) as bench:
        res = bench.call("t", {"n": 10**400})
    assert res.error.code == "E_SCHEMA" and "could not be checked" in res.error.message


def test_SEC7_10000_missing_required_fields_listed_bounded(tmp_path: Path) -> None:
    # Today: every `required` error lists every missing name (10,000²), 2.5 GB
    out = isolated(
        f"""
        import json, time, tracemalloc
        import workbench
        from conftest import GemBuilder
        from pathlib import Path
        gem = GemBuilder(Path({str(tmp_path / "g")!r}))
        names = [f"f{{i}}" for i in range(10_000)]
        gem.tool("t", "def handle(i, c): return 1", schema={{"type": "object", "required": names}})
        bench = workbench.open(gem.write())
        tracemalloc.start()
        t = time.monotonic()
        err = bench.call("t", {{}}).error
        print(json.dumps({{"s": time.monotonic() - t, "mb": tracemalloc.get_traced_memory()[1] / 1e6,
                          "n": len(err.details["violations"]), "msg": err.message,
                          "code": err.code, "first": err.details["violations"][0]}}))
    """,
        timeout=60,
        memory_mb=1200,
    )
    got = json.loads(out)
    assert got["code"] == "E_SCHEMA" and got["n"] == MAX_VIOLATIONS
    assert got["first"] == {"path": "/f0", "message": "missing required field 'f0'"}
    assert got["mb"] < 100, got  # its time is bounded by the subprocess timeout, not asserted
    assert "(10,000 problems)" in got["msg"] and "and 9,950 more" in got["msg"]
    assert len(got["msg"]) < 10_000


def test_SEC7_many_unexpected_fields_counted_and_listed_bounded(gem: GemBuilder) -> None:
    gem.tool("t", ECHO, schema={"type": "object", "additionalProperties": False})
    with workbench.open(gem.write()) as bench:
        res = bench.call("t", {f"k{i}": i for i in range(20_000)})
    assert len(res.error.details["violations"]) == MAX_VIOLATIONS
    assert "(20,000 problems)" in res.error.message


def test_SEC7_exponential_schema_is_stopped_in_bounded_time(tmp_path: Path) -> None:
    # allOf of two refs to the same recursive definition: 2^depth subschema applications. Legal
    # at load (each step consumes an item); the check stops on its step budget.
    out = isolated(
        f"""
        import json, time
        import workbench
        from conftest import GemBuilder
        from pathlib import Path
        gem = GemBuilder(Path({str(tmp_path / "g")!r}))
        n = {{"type": "array", "allOf": [{{"items": {{"$ref": "#/$defs/n"}}}},
                                          {{"items": {{"$ref": "#/$defs/n"}}}}]}}
        gem.tool("t", "def handle(i, c): return 1", schema={{"type": "object", "$defs": {{"n": n}},
                 "properties": {{"a": {{"$ref": "#/$defs/n"}}}}}})
        value = []
        for _ in range(40):
            value = [value]
        bench = workbench.open(gem.write())
        t = time.monotonic()
        err = bench.call("t", {{"a": value}}).error
        print(json.dumps({{"s": time.monotonic() - t, "code": err.code, "msg": err.message,
                          "complete": err.details.get("complete")}}))
    """,
        timeout=30,
    )
    got = json.loads(out)
    assert got["code"] == "E_SCHEMA" and "stopped after" in got["msg"], got
    assert got["complete"] is False  # stopped by its step budget (the timeout guards a hang)


def _unevaluated_chain(depth: int, form: str) -> dict:
    """Each level reaches the next twice without a keyword jsonschema counts: through
    `$ref` and `$dynamicRef`, or through two dependentSchemas; unevaluatedProperties at the
    root walks all 2^depth paths."""
    defs: dict[str, Any] = {}
    for i in range(depth):
        nxt = f"#/$defs/n{i + 1}"
        defs[f"n{i}"] = (
            {"$ref": nxt, "$dynamicRef": nxt}
            if form == "dynamicRef"
            else {"dependentSchemas": {"a": {"$ref": nxt}, "b": {"$ref": nxt}}}
        )
    defs[f"n{depth}"] = {}
    return {
        "type": "object",
        "unevaluatedProperties": False,
        "properties": {"a": {}, "b": {}},
        "$ref": "#/$defs/n0",
        "$defs": defs,
    }


@pytest.mark.parametrize("form", ["dynamicRef", "dependentSchemas"])
@pytest.mark.parametrize("depth", [20, 30])
def test_SEC7_unevaluated_properties_through_doubling_refs_is_stopped(
    tmp_path: Path, form: str, depth: int
) -> None:
    # Today: jsonschema's unevaluatedProperties follows refs outside any counted keyword:
    # 42 s at depth 20, doubling per level, past CHECK_SECONDS and the tool's timeout. The
    # check's clock is the backstop of a slow machine (a loaded one hit it first): it is taken
    # out here, so only the counted steps can stop the check (a hang is the isolated timeout)
    out = isolated(
        f"""
        import json, time
        import workbench
        from workbench.gem import schema
        schema.CHECK_SECONDS = float("inf")
        from conftest import GemBuilder
        from pathlib import Path
        from test_sec_gem import _unevaluated_chain
        gem = GemBuilder(Path({str(tmp_path / "g")!r}))
        gem.tool("t", "def handle(i, c): return 1",
                 schema=_unevaluated_chain({depth}, {form!r}))
        bench = workbench.open(gem.write())
        t = time.monotonic()
        err = bench.call("t", {{"a": 1, "b": 2}}).error
        print(json.dumps({{"s": time.monotonic() - t, "code": err and err.code,
                          "msg": err and err.message,
                          "complete": err and err.details.get("complete")}}))
    """,
        timeout=40,
    )
    got = json.loads(out)
    assert got["code"] == "E_SCHEMA" and "stopped after" in got["msg"], got
    assert got["complete"] is False and "steps" in got["msg"], got  # by steps, not the clock


@pytest.mark.parametrize("form", ["dynamicRef", "dependentSchemas"])
def test_SEC7_unevaluated_properties_through_short_ref_chains_still_checks(
    gem: GemBuilder, form: str
) -> None:
    gem.tool("t", ECHO, schema=_unevaluated_chain(4, form))
    with workbench.open(gem.write()) as bench:
        assert bench.call("t", {"a": 1, "b": 2}).value == {"got": {"a": 1, "b": 2}}
        err = bench.call("t", {"a": 1, "c": 3}).error
    assert err.code == "E_SCHEMA" and "'c' was unexpected" in err.message


UNEVALUATED_CASES = [  # (schema, input): the bounded check must agree with jsonschema's
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, {"a": 1}),
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, {"a": 1, "b": 2, "c": 3}),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False}, {"a": 1}),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False}, {"a": "x"}),
    (
        {
            "anyOf": [
                {"properties": {"a": {}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]},
            ],
            "unevaluatedProperties": False,
        },
        {"a": 1, "b": 2},
    ),
    (
        {
            "oneOf": [
                {"properties": {"a": {}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]},
            ],
            "unevaluatedProperties": False,
        },
        {"b": 1, "c": 2},
    ),
    (
        {
            "if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
            "then": {"properties": {"x": {}}},
            "else": {"properties": {"y": {}}},
            "properties": {"k": {}},
            "unevaluatedProperties": False,
        },
        {"k": 1, "x": 1},
    ),
    (
        {
            "if": {"properties": {"k": {"const": 1}}, "required": ["k"]},
            "then": {"properties": {"x": {}}},
            "else": {"properties": {"y": {}}},
            "properties": {"k": {}},
            "unevaluatedProperties": False,
        },
        {"k": 2, "x": 1},
    ),
    (
        {
            "dependentSchemas": {"a": {"properties": {"b": {}}}},
            "properties": {"a": {}},
            "unevaluatedProperties": False,
        },
        {"a": 1, "b": 2},
    ),
    (
        {
            "dependentSchemas": {"a": {"properties": {"b": {}}}},
            "properties": {"a": {}},
            "unevaluatedProperties": False,
        },
        {"b": 2},
    ),
    (
        {
            "$ref": "#/$defs/base",
            "$defs": {"base": {"properties": {"a": {}}}},
            "unevaluatedProperties": False,
        },
        {"a": 1, "z": 0},
    ),
    (
        {
            "$ref": "#/$defs/base",
            "$defs": {"base": {"properties": {"a": {}}}},
            "unevaluatedProperties": {"type": "string"},
        },
        {"a": 1, "z": "s"},
    ),
    (
        {
            "$ref": "#/$defs/base",
            "$defs": {"base": {"properties": {"a": {}}}},
            "unevaluatedProperties": {"type": "string"},
        },
        {"a": 1, "z": 0},
    ),
    ({"additionalProperties": {"type": "integer"}, "unevaluatedProperties": False}, {"a": 1, "b": "x"}),
    (
        {"properties": {"o": {"properties": {"p": {}}, "unevaluatedProperties": False}}},
        {"o": {"p": 1, "q": 2}},
    ),
    ({"prefixItems": [{}, {}], "unevaluatedItems": False}, [1, 2]),
    ({"prefixItems": [{}, {}], "unevaluatedItems": False}, [1, 2, 3]),
    ({"prefixItems": [{}], "unevaluatedItems": False}, []),
    ({"allOf": [{"prefixItems": [{}]}], "unevaluatedItems": {"type": "string"}}, [1, "a"]),
    ({"allOf": [{"prefixItems": [{}]}], "unevaluatedItems": {"type": "string"}}, [1, 2]),
    ({"contains": {"type": "string"}, "unevaluatedItems": False}, ["a", "b"]),
    ({"contains": {"type": "string"}, "unevaluatedItems": False}, ["a", 1]),
    ({"$ref": "#/$defs/l", "$defs": {"l": {"items": {}}}, "unevaluatedItems": False}, [1, 2]),
    (
        {"if": {"prefixItems": [{"const": 1}]}, "then": {"prefixItems": [{}, {}]}, "unevaluatedItems": False},
        [1, 2, 3],
    ),
]


@pytest.mark.parametrize("schema,value", UNEVALUATED_CASES)
def test_SEC7_unevaluated_keywords_agree_with_jsonschema(schema: dict, value: Any) -> None:
    from jsonschema import Draft202012Validator

    assert check_input_schema(schema) == []
    expected = sorted(e.message for e in Draft202012Validator(schema).iter_errors(value))
    got = InputValidator(schema).check(value, size=3)
    assert got.complete
    assert sorted(v["message"] for v in got.violations) == expected


def test_SEC7_large_valid_input_checks_in_linear_time(echo, gem: GemBuilder) -> None:
    gem.tool(
        "list",
        ECHO,
        schema={
            "type": "object",
            "properties": {
                "xs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"n": {"type": "integer"}},
                        "required": ["n"],
                        "additionalProperties": False,
                    },
                }
            },
        },
    )
    with workbench.open(gem.write()) as bench:
        assert bench.call("list", {"xs": [{"n": 0}]}).ok  # imports and caches: not counted

        def steps(n: int) -> int:
            xs = [{"n": i} for i in range(n)]
            return python_steps(lambda: bench.call("list", {"xs": xs}).raise_for_error())

        small, big = steps(1_000), steps(10_000)
    assert big < 15 * small, (small, big)  # 10× the input, 10× the work (quadratic: 100×)


# -- SEC7: open() never raises anything but E_MANIFEST for hostile gem data -------------------


def test_SEC7_manifest_nested_100000_levels_is_E_MANIFEST(gem: GemBuilder) -> None:
    root = gem.write()
    (root / "manifest.json").write_text(
        '{"id": "a", "name": "A", "version": "0.1.0", '
        '"tools": [], "agent": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    err = load_error(root)
    assert "nested deeper than" in err.message and err.details["file"].endswith("manifest.json")


def test_SEC7_manifest_depth_over_the_bound_names_the_pointer(gem: GemBuilder) -> None:
    gem.manifest["agent"] = {"id": "a", "name": "n", "x": json.loads("[" * 70 + "]" * 70)}
    err = load_error(gem.write())
    assert err.details["pointer"].startswith("/agent/x/0/0") and err.details["limit"] == 64


@pytest.mark.parametrize(
    "field", ["name", "id", "description", "tool name", "tool description", "schema key"]
)
def test_SEC7_lone_surrogate_in_manifest_is_E_MANIFEST(gem: GemBuilder, field: str) -> None:
    gem.tool("t", ECHO)
    root = gem.write()
    m = gem.manifest
    target = {
        "name": (m, "name"),
        "id": (m, "id"),
        "description": (m, "description"),
        "tool name": (m["tools"][0], "name"),
        "tool description": (m["tools"][0], "description"),
    }.get(field)
    if target:
        target[0][target[1]] = "x\ud800"
    else:
        m["tools"][0]["inputSchema"] = {"type": "object", "properties": {"k\udfff": {}}}
    # json.dumps writes the escape "\ud800", as a hostile manifest would
    (root / "manifest.json").write_text(json.dumps(m))
    err = load_error(root)
    assert "surrogate" in err.message or "does not match" in err.message
    err.message.encode("utf-8")  # printable
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "check", str(root)], capture_output=True, timeout=60
    )
    assert out.returncode == 1 and b"Traceback" not in out.stderr


def test_SEC7_manifest_larger_than_the_bound_is_E_MANIFEST(gem: GemBuilder) -> None:
    gem.manifest["description"] = "x" * MAX_MANIFEST_BYTES
    err = load_error(gem.write())
    assert "larger than 4,194,304 bytes" in err.message


def test_SEC7_schemas_too_big_to_check_quickly_are_E_MANIFEST(gem: GemBuilder) -> None:
    # jsonschema's metaschema check costs ~1 ms per object: 40,000 of them took minutes. The
    # error naming the 5,000-object bound is the proof that the schema was refused unchecked
    gem.tool("small", ECHO)
    for k in range(2):
        gem.tool(
            f"t{k}",
            ECHO,
            schema={"type": "object", "properties": {f"p{i}": {"type": "object"} for i in range(6_000)}},
        )
    err = load_error(gem.write())
    assert pointers(err) == ["/tools/1/inputSchema"] and "5,000 objects" in err.message


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '"gem"',
        "null",
        "1",
        "1e999",
        "-" + "9" * 5000,
        "",
        "\ufeff{}",
        '{"id": "a"' + ', "x": 1' * 10 + "}",
        "\x00",
    ],
)
def test_SEC7_manifest_not_an_object_is_E_MANIFEST(gem: GemBuilder, text: str) -> None:
    root = gem.write()
    (root / "manifest.json").write_text(text, encoding="utf-8")
    load_error(root)
    assert lint(root)


def test_SEC7_manifest_not_utf8_is_E_MANIFEST(gem: GemBuilder) -> None:
    root = gem.write()
    (root / "manifest.json").write_bytes(b'{"id": "\xff"}')
    assert "not UTF-8" in load_error(root).message


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop", "dangling"])
def test_SEC7_manifest_that_is_not_a_regular_file_is_E_MANIFEST(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "g"
    root.mkdir()
    m = root / "manifest.json"
    if kind == "fifo":  # today: open() blocks forever
        os.mkfifo(m)
    elif kind == "dir":
        m.mkdir()
    elif kind == "loop":
        m.symlink_to(root / "manifest.json")
    else:
        m.symlink_to(root / "gone.json")
    err = unblocking(m, lambda: load_error(root))
    assert err.message.startswith("manifest.json") and err.details["file"] == str(m)
    assert len(unblocking(m, lambda: lint(root))) == 1


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop", "device", "other extension"])
def test_SEC7_tool_file_that_is_not_a_regular_file_is_E_MANIFEST(gem: GemBuilder, kind: str) -> None:
    gem.tool("t", ECHO)
    root = gem.write()
    tool = root / "tools" / "t.py"
    tool.unlink()
    if kind == "fifo":
        os.mkfifo(tool)
    elif kind == "dir":
        tool.mkdir()
    elif kind == "loop":
        tool.symlink_to(root / "tools" / "u.py")
        (root / "tools" / "u.py").symlink_to(tool)
    elif kind == "device":
        tool.symlink_to("/dev/null")
    else:
        (root / "tools" / "t.txt").write_text(ECHO)
        tool.symlink_to(root / "tools" / "t.txt")
    err = load_error(root)
    assert "/tools/0/file" in pointers(err) or "symbolic link" in err.message, err.message


@pytest.mark.parametrize("kind", ["fifo", "not utf-8", "too large", "dir", "link outside"])
def test_SEC7_db_schema_sql_hostile_is_E_MANIFEST(gem: GemBuilder, tmp_path: Path, kind: str) -> None:
    gem.tool("t", ECHO)
    root = gem.write()
    sql = root / "db" / "schema.sql"
    sql.parent.mkdir()
    if kind == "fifo":  # today: open() blocks forever
        os.mkfifo(sql)
    elif kind == "not utf-8":  # today: a raw UnicodeDecodeError
        sql.write_bytes(b"CREATE TABLE t(x); -- \xff\xfe")
    elif kind == "too large":
        sql.write_bytes(b"-- " + b"x" * (4 * 1024 * 1024))
    elif kind == "dir":
        sql.mkdir()
    else:
        (tmp_path / "elsewhere.sql").write_text("CREATE TABLE t(x);")
        sql.symlink_to(tmp_path / "elsewhere.sql")
    err = unblocking(sql, lambda: load_error(root))
    assert any(p["file"] == str(sql) for p in err.details["problems"]), err.message


@pytest.mark.parametrize(
    "where,value",
    [
        (("tools", 0, "name"), "add\n"),
        (("id",), "acme.notes\n"),
        (("version",), "0.1.0\n"),
        (("name",), "Notes\n"),
        (("tools", 0, "file"), "tools/t.py\n"),
        (("resources", 0, "id"), "model\n"),
        (("resources", 0, "sha256"), "0" * 64 + "\n"),
    ],
)
def test_SEC7_trailing_newline_in_names_is_rejected(gem: GemBuilder, where: tuple, value: str) -> None:
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [{"id": "model", "url": "https://x.example/m", "sha256": "0" * 64}]
    node: Any = gem.manifest
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    err = load_error(gem.write())
    assert "/" + "/".join(map(str, where)) in pointers(err)


def test_SEC7_trailing_newline_in_collection_names_is_rejected(gem: GemBuilder) -> None:
    gem.tool("t", ECHO).collections(**{"notes\n": ["status"]})
    assert "/data/collections" in pointers(load_error(gem.write()))[0]


def test_SEC7_every_regex_of_the_gem_package_anchors_the_end_with_Z() -> None:
    # Python's `$` also matches before a final newline: "add\n" would pass `^[a-z]+$`
    patterns: list[str] = []
    stack: list[Any] = [manifest_schema()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            patterns += [v for k, v in node.items() if k == "pattern" and isinstance(v, str)]
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    assert patterns and all(p.endswith("\\Z") and "$" not in p for p in patterns), patterns
    loaders = (Path(workbench.gem.__file__).parent, Path(workbench.platforms.__file__).parent)
    source = "".join(p.read_text() for d in loaders for p in d.rglob("*.py"))
    for m in re.finditer(r"re\.(compile|match|search)\(r?[\"'](.*?)[\"']", source):
        assert "$" not in m.group(2), m.group(0)


# -- SEC2: manifest values that become paths --------------------------------------------------


def test_SEC2_resource_id_escaping_the_cache_is_rejected_at_load(gem: GemBuilder, tmp_path: Path) -> None:
    # Today: open() downloads the required resource to <state>/resources/<sha>/../../../x
    payload = b"export PATH=/evil:$PATH\n"
    sha = hashlib.sha256(payload).hexdigest()
    rid = "../../../escaped.bashrc"
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [{"id": rid, "url": "https://x.example/r", "sha256": sha, "required": True}]
    root = gem.write()
    state = tmp_path / "state"
    with pytest.raises(workbench.GemLoadError) as ei:
        workbench.open(root, state_dir=state, resources={rid: payload}).close()
    time.sleep(0.2)  # a background download would have landed by now
    assert "/resources/0/id" in pointers(ei.value)
    assert not (tmp_path / "escaped.bashrc").exists()
    assert not any(p.name == "escaped.bashrc" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize(
    "rid",
    [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "..",
        ".hidden",
        "a..b",
        "a/b",
        "a\\b",
        "x" * 129,
        "",
        "a\x00b",
        "-rf",
    ],
)
def test_SEC2_unsafe_resource_ids_are_rejected_by_open_and_check(
    gem: GemBuilder, rid: str, capsys: Any
) -> None:
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [{"id": rid, "url": "https://x.example/r", "sha256": "0" * 64}]
    root = gem.write()
    assert "/resources/0/id" in pointers(load_error(root))
    assert cli_main(["check", str(root)]) == 1
    assert "#/resources/0/id" in capsys.readouterr().err


def test_SEC2_safe_resource_ids_load(gem: GemBuilder) -> None:
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [
        {"id": rid, "url": "https://x.example/r", "sha256": "0" * 64}
        for rid in ("ocr-model", "model.v2.onnx", "A_1", "x" * 128)
    ]
    assert lint(gem.write()) == []


def test_SEC2_duplicate_resource_ids_are_rejected(gem: GemBuilder) -> None:
    gem.tool("t", ECHO)
    gem.manifest["resources"] = [
        {"id": "m", "url": "https://x.example/r", "sha256": "0" * 64},
        {"id": "m", "url": "https://x.example/s", "sha256": "1" * 64},
    ]
    assert pointers(load_error(gem.write())) == ["/resources/1/id"]


@pytest.mark.parametrize("gid", ["../../x", "..", "a/b", "a..b", ".state", "x" * 129, "a\n"])
def test_SEC2_gem_id_used_as_state_folder_must_be_a_safe_name(
    gem: GemBuilder, tmp_path: Path, gid: str
) -> None:
    gem.tool("t", ECHO)
    gem.manifest["id"] = gid
    assert pointers(load_error(gem.write())) == ["/id"]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "file",
    [
        "tools/../manifest.py",
        "tools/./t.py",
        "tools//t.py",
        "tools/a\\..\\t.py",
        "tools/t\x00.py",
        "/etc/t.py",
        "tools/sub/../../t.py",
    ],
)
def test_SEC2_tool_file_paths_stay_in_the_tools_folder(gem: GemBuilder, file: str) -> None:
    gem.tool("t", ECHO)
    gem.manifest["tools"][0]["file"] = file
    assert "/tools/0/file" in pointers(load_error(gem.write()))


def test_SEC2_tool_file_linked_elsewhere_in_the_gem_is_rejected(gem: GemBuilder) -> None:
    gem.tool("t", ECHO)
    root = gem.write()
    (root / "other.py").write_text(ECHO)
    (root / "tools" / "t.py").unlink()
    (root / "tools" / "t.py").symlink_to(root / "other.py")
    assert "/tools/0/file" in pointers(load_error(root))


def link_loop(folder: Path, loop: str) -> None:
    """A link to itself ("self") or two links to each other ("pair") in `folder`."""
    if loop == "self":
        os.symlink("x", folder / "x")
    else:
        os.symlink("b", folder / "a")
        os.symlink("a", folder / "b")


@pytest.mark.parametrize("loop", ["self", "pair"])
def test_SEC7_a_symlink_loop_in_the_gem_folder_is_named_at_open_and_by_check(
    gem: GemBuilder, loop: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decision: a loop can never be opened, by a tool or by Deno, so it is a load problem
    (E_MANIFEST naming the link) like a link leading outside; before, the gem opened without
    a word."""
    gem.tool("t", ECHO)
    root = gem.write()
    (root / "fixtures").mkdir()
    link_loop(root / "fixtures", loop)
    with pytest.raises(workbench.GemLoadError) as exc:
        workbench.open(root)
    assert "fixtures/" in exc.value.message and "symbolic link loop" in exc.value.message
    assert cli_main(["check", str(root)]) == 1
    assert "symbolic link loop" in capsys.readouterr().err


@pytest.mark.deno
@pytest.mark.parametrize("loop", ["self", "pair"])
def test_SEC7_a_symlink_loop_in_an_ekanos_integration_is_named_at_open_and_by_check(
    tmp_path: Path, loop: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gems' rule for Ekanos integrations, whose folder check (GemLinks) looks only for
    links leading outside: a loop is E_MANIFEST naming the link at open and in
    gem-workbench check (it opened without a word before)."""
    root = tmp_path / "integration"
    (root / "fixtures").mkdir(parents=True)
    (root / "integration.ts").write_text(
        "import { defineIntegration } from '@ekanos/sdk';\n"
        "export default defineIntegration({ slug: 'demo', egress: ['api.demo.example'], tools: [\n"
        "  { name: 'x', description: 'd', parameters: { type: 'object', properties: {} },\n"
        "    outputExample: { ok: true }, async run(ctx, args) { return { ok: true }; } }] });\n"
    )
    link_loop(root / "fixtures", loop)
    with pytest.raises(workbench.GemLoadError) as exc:
        workbench.open(root, state_dir=tmp_path / "state")
    assert exc.value.code == "E_MANIFEST"
    assert "fixtures/" in exc.value.message and "symbolic link loop" in exc.value.message
    assert exc.value.details["file"].startswith(str(root / "fixtures"))
    assert cli_main(["check", str(root)]) == 1
    assert "symbolic link loop" in capsys.readouterr().err
    for name in os.listdir(root / "fixtures"):
        os.unlink(root / "fixtures" / name)
    workbench.open(root, state_dir=tmp_path / "state").close()
