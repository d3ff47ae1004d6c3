"""The call pipeline: input checks (N8), results (N9), tool errors, Python runner."""

from __future__ import annotations

import asyncio

import pytest

import workbench

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "n": {"type": "integer"},
        "opt": {"type": "string"},
        "inner": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
            "additionalProperties": False,
        },
    },
    "required": ["title"],
    "additionalProperties": False,
}
ECHO = "def handle(input, ctx):\n    return {'got': input}\n"


@pytest.fixture
def echo(gem, open_bench):
    gem.tool("echo", ECHO, schema=SCHEMA)
    return open_bench(gem)


def test_N8_valid_input_runs(echo):
    res = echo.call("echo", {"title": "a", "n": 2})
    assert res.ok and res.value == {"got": {"title": "a", "n": 2}}


def test_N8_every_violation_listed_with_path_and_tool_not_run(echo):
    res = echo.call("echo", {"n": "two", "extra": 1, "inner": {"x": "no", "y": 1}})
    assert not res.ok and res.error.code == "E_SCHEMA"
    paths = {v["path"] for v in res.error.details["violations"]}
    assert paths == {"/title", "/n", "/extra", "/inner/x", "/inner/y"}
    for p in paths:
        assert p in res.error.message
    assert res.trace_rows == [] and echo.calls()["ctx_calls"].tolist() == [0]


def test_N8_wrong_type_missing_required_extra_field(echo):
    assert echo.call("echo", {"title": 1}).error.details["violations"] == [
        {"path": "/title", "message": "1 is not of type 'string'"}
    ]
    assert "missing required field 'title'" in echo.call("echo", {}).error.message
    assert "unexpected field 'zzz'" in echo.call("echo", {"title": "a", "zzz": 0}).error.message


def test_N8_null_for_optional_parameter_is_absent(echo):
    res = echo.call("echo", {"title": "a", "opt": None, "n": None})
    assert res.ok and res.value == {"got": {"title": "a"}}


def test_N8_null_for_required_parameter_is_an_error(echo):
    res = echo.call("echo", {"title": None})
    assert res.error.code == "E_SCHEMA" and "/title" in res.error.message


ECHOES = {
    "py": ECHO,
    "js": "export async function handle(input, ctx) {\n  return { got: input };\n}\n",
}
STRICT = {  # the issue's case: one declared field, nothing else allowed
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}
ALL_OF = {  # the suite's "allOf with base schema": baz is required (and may be null) through allOf
    "properties": {"bar": {"type": "integer"}},
    "required": ["bar"],
    "allOf": [
        {"properties": {"foo": {"type": "string"}}, "required": ["foo"]},
        {"properties": {"baz": {"type": "null"}}, "required": ["baz"]},
    ],
}


def echo_bench(gem, opened, lang, schema):
    gem.tool("echo", ECHOES[lang], schema=schema, ext=lang)
    return opened(gem)


def test_N8_null_for_an_undeclared_field_is_an_extra_field(gem, opened, lang):
    bench = echo_bench(gem, opened, lang, STRICT)
    res = bench.call("echo", {"a": "x", "zzz": None})
    assert res.error.code == "E_SCHEMA" and "unexpected field 'zzz'" in res.error.message
    assert res.error.details["violations"] == [
        {"path": "/zzz", "message": "unexpected field 'zzz' (additionalProperties is false)"}
    ]
    assert bench.call("echo", {"a": "x"}).value == {"got": {"a": "x"}}


def test_N8_null_for_a_field_required_through_allOf_is_kept(gem, opened, lang):
    bench = echo_bench(gem, opened, lang, ALL_OF)
    args = {"foo": "quux", "bar": 2, "baz": None}
    assert bench.call("echo", args).value == {"got": args}  # the suite: valid, baz is null
    res = bench.call("echo", {"bar": 2, "baz": None})  # the suite: invalid for foo only
    assert res.error.code == "E_SCHEMA"
    assert [v["path"] for v in res.error.details["violations"]] == ["/foo"]


def test_N8_null_for_a_declared_optional_field_in_allOf_is_absent(gem, opened, lang):
    schema = {"type": "object", "allOf": [{"properties": {"opt": {"type": "string"}}}], "required": ["a"]}
    bench = echo_bench(gem, opened, lang, schema)
    assert bench.call("echo", {"a": 1, "opt": None}).value == {"got": {"a": 1}}
    # an undeclared null stays, for the schema to judge; a conditional requirement keeps it too
    assert bench.call("echo", {"a": 1, "zzz": None}).value == {"got": {"a": 1, "zzz": None}}


def test_N8_null_for_a_field_required_by_dependentRequired_is_kept(gem, opened, lang):
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "dependentRequired": {"a": ["b"]},
    }
    bench = echo_bench(gem, opened, lang, schema)
    res = bench.call("echo", {"a": "x", "b": None})
    assert res.error.code == "E_SCHEMA" and [v["path"] for v in res.error.details["violations"]] == ["/b"]


def test_N8_input_that_is_not_json(echo):
    res = echo.call("echo", {"title": "a", "n": float("nan")})
    assert res.error.code == "E_SCHEMA" and "NaN" in res.error.message


def test_input_is_copied_not_aliased(gem, open_bench):
    gem.tool("mut", "def handle(input, ctx):\n    input['l'].append(1)\n    return input\n")
    b = open_bench(gem)
    data = {"l": []}
    assert b.call("mut", data).value == {"l": [1]}
    assert data == {"l": []}


def test_unknown_tool(echo):
    res = echo.call("nope", {})
    assert res.error.code == "E_UNKNOWN_TOOL" and "echo" in res.error.message


@pytest.mark.parametrize(
    "expr,where",
    [
        ("float('nan')", "result.v"),
        ("b'x'", "result.v"),
        ("object()", "result.v"),
        ("{1: 2}", "result.v"),
        ("[1, {'x': float('inf')}]", "result.v[1].x"),
    ],
)
def test_N9_result_must_be_json(gem, open_bench, expr, where):
    gem.tool("bad", f"def handle(input, ctx):\n    return {{'v': {expr}}}\n")
    res = open_bench(gem).call("bad")
    assert res.error.code == "E_RESULT_NOT_JSON"
    assert res.error.details["field"] == where


def test_N9_result_cycle(gem, open_bench):
    gem.tool("cyc", "def handle(input, ctx):\n    a = []\n    a.append(a)\n    return a\n")
    assert "cycle" in open_bench(gem).call("cyc").error.message


def test_N9_result_size_limit_counts_json_characters(gem, open_bench):
    # {"s":"…"} adds 8 characters around the string
    gem.tool("big", "def handle(input, ctx):\n    return {'s': 'x' * input['n']}\n")
    b = open_bench(gem)
    assert b.call("big", {"n": 1_048_576 - 8}).ok
    res = b.call("big", {"n": 1_048_576 - 7})
    assert res.error.code == "E_RESULT_TOO_LARGE"
    assert res.error.details == {"size": 1_048_577, "limit": 1_048_576}
    assert "1,048,577" in res.error.message


def test_N9_astral_characters_count_as_two(gem, open_bench):
    gem.tool("emoji", "def handle(input, ctx):\n    return '\\U0001F600' * input['n']\n")
    b = open_bench(gem)
    assert b.call("emoji", {"n": (1_048_576 - 2) // 2}).ok
    assert b.call("emoji", {"n": (1_048_576 - 2) // 2 + 1}).error.code == "E_RESULT_TOO_LARGE"


def test_result_is_what_the_caller_receives_after_json(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    return {'t': (1, 2), 'f': 1.5}\n")
    assert open_bench(gem).call("t").value == {"t": [1, 2], "f": 1.5}


def test_tool_error_shows_only_tool_frames(gem, open_bench):
    gem.tool(
        "boom",
        """
        def helper(x):
            return 1 / x

        def handle(input, ctx):
            return helper(0)
    """,
    )
    res = open_bench(gem).call("boom")
    assert res.error.code == "E_TOOL_ERROR"
    assert res.error.message == "ZeroDivisionError: division by zero"
    stack = res.error.details["stack"]
    assert "boom.py" in stack and "helper" in stack and "return 1 / x" in stack
    assert "workbench" not in stack.replace("boom.py", "")


def test_uncaught_ctx_error_keeps_its_code(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    return ctx.files.read('missing.txt')\n")
    res = open_bench(gem).call("t")
    assert res.error.code == "E_NOT_FOUND" and "missing.txt" in res.error.message
    assert "t.py" in res.error.details["stack"]


def test_tool_can_catch_ctx_errors_by_code(gem, open_bench):
    gem.tool(
        "t",
        """
        import workbench
        def handle(input, ctx):
            try:
                ctx.files.read('missing.txt')
            except workbench.WorkbenchError as e:
                return {'caught': e.code}
    """,
    )
    assert open_bench(gem).call("t").value == {"caught": "E_NOT_FOUND"}


def test_syntax_error_in_tool(gem, open_bench):
    gem.tool("t", "def handle(input, ctx)\n    return 1\n")
    res = open_bench(gem).call("t")
    assert res.error.code == "E_TOOL_ERROR" and "SyntaxError" in res.error.message


def test_missing_handle(gem, open_bench):
    gem.tool("t", "def run(input, ctx):\n    return 1\n")
    res = open_bench(gem).call("t")
    assert res.error.code == "E_TOOL_ERROR" and "handle" in res.error.message


def test_sync_and_async_tools_share_the_ctx_api(gem, open_bench):
    gem.tool(
        "s",
        "def handle(input, ctx):\n    ctx.storage.kv.set('k', 'sync')\n    return ctx.storage.kv.get('k')\n",
    )
    gem.tool(
        "a",
        "async def handle(input, ctx):\n    await ctx.storage.kv.set('k', 'async')\n    return await ctx.storage.kv.get('k')\n",
    )
    b = open_bench(gem)
    assert b.call("s").value == "sync" and b.call("a").value == "async"


def test_async_tool_runs_inside_a_running_event_loop(gem, open_bench):
    """In Jupyter an event loop already runs: async tools still work."""
    gem.tool(
        "a", "import asyncio\nasync def handle(input, ctx):\n    await asyncio.sleep(0)\n    return 42\n"
    )
    b = open_bench(gem)

    async def inside_loop():
        return b.call("a")

    assert asyncio.run(inside_loop()).value == 42


def test_logs_are_captured(gem, open_bench):
    gem.tool(
        "p",
        "import sys\ndef handle(input, ctx):\n    print('hello')\n    print('oops', file=sys.stderr)\n    return 1\n",
    )
    res = open_bench(gem).call("p")
    assert res.logs == "hello\noops\n"


def test_trace_has_one_row_per_ctx_call(gem, open_bench):
    gem.tool(
        "t",
        "def handle(input, ctx):\n    ctx.files.write('a.txt', 'x')\n    ctx.files.read('a.txt')\n    ctx.files.read('nope')\n",
    )
    res = open_bench(gem).call("t")
    df = res.trace
    assert df["method"].tolist() == ["files.write", "files.read", "files.read"]
    assert df["ok"].tolist() == [True, True, False] and df["error"].tolist()[2] == "E_NOT_FOUND"
    assert (df["duration_us"] > 0).all()


def test_each_call_has_an_id_and_duration(echo):
    a, b = echo.call("echo", {"title": "a"}), echo.call("echo", {"title": "b"})
    assert a.call_id != b.call_id and a.duration_ms > 0
    assert echo.calls()["call_id"].tolist() == [a.call_id, b.call_id]


def test_edited_tool_is_reloaded(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    return 1\n")
    b = open_bench(gem)
    assert b.call("t").value == 1
    path = gem.root / "tools" / "t.py"
    path.write_text("def handle(input, ctx):\n    return 2\n")
    import os

    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert b.call("t").value == 2


def test_raise_for_error(echo):
    with pytest.raises(workbench.WorkbenchError) as ei:
        echo.call("echo", {}).raise_for_error()
    assert ei.value.code == "E_SCHEMA"
    assert echo.call("echo", {"title": "x"}).raise_for_error().ok


def test_wasm_tool_is_unsupported_with_a_clear_error(gem, open_bench):
    gem.tool("w", "", ext="wasm")
    res = open_bench(gem).call("w")
    assert res.error.code == "E_UNSUPPORTED" and "tools/w.wasm" in res.error.message


def test_wrong_arguments_to_a_ctx_method_name_the_signature(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    return ctx.files.read()\n")
    res = open_bench(gem).call("t")
    assert res.error.code == "E_INVALID_ARGUMENT"
    assert "files.read(path" in res.error.message


def test_result_with_lone_surrogate_does_not_raise(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    return 'a\\ud800b'\n")
    res = open_bench(gem).call("t")
    assert res.ok and res.value == "a\ud800b"


def test_call_on_a_closed_bench_is_a_usage_error(echo):
    echo.close()
    with pytest.raises(workbench.UsageError, match="closed"):
        echo.call("echo", {"title": "a"})


def test_the_tool_gets_a_copy_of_its_input_and_the_caller_a_copy_of_its_result(gem, open_bench):
    """A flat input or result (no nesting) is copied too: what the caller passed stays as it
    was, and a value the tool keeps and changes later does not change a result given."""
    gem.tool(
        "keep",
        "KEPT = {}\n"
        "def handle(input, ctx):\n"
        "    input['added'] = 1\n"
        "    KEPT.update(input)\n"
        "    return KEPT\n",
    )
    bench = open_bench(gem)
    given = {"title": "a", "n": 2}
    first = bench.call("keep", given)
    assert given == {"title": "a", "n": 2} and first.value == {"title": "a", "n": 2, "added": 1}
    bench.call("keep", {"other": True})
    assert first.value == {"title": "a", "n": 2, "added": 1}
