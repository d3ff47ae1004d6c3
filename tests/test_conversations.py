"""Issue 45, part 2: a recorded conversation's tool calls replayed on the gem as it is today.

The transcripts in tests/data/conversations/ are written by hand in each provider's documented
shape (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages), one conversation each:
greet, add, count twice (state carries from call to call), and a tool that fails. They replay
with every call matching on Python tools and on JS tools in the real Deno sandbox; an edited
tool makes the replay name the call and the value that differ; `--save` keeps a conversation
as a test that `gem-workbench test` passes, then fails once the tool changes; hostile
transcripts are E_CONVERSATION naming the field or the limit, never a traceback."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from test_cli import cli

import workbench
from workbench import WorkbenchError
from workbench.conversations.read import CONVERSATION_BYTES, MAX_CALLS, read_conversation

DATA = Path(__file__).parent / "data" / "conversations"
FORMATS = {"openai_chat": "openai-chat", "openai_responses": "openai-responses", "anthropic": "anthropic"}
ORDER = ["greet", "add", "count", "count", "boom"]

PY_TOOLS = {
    "greet": 'def handle(input, ctx):\n    return {"greeting": "Hello, " + input["name"], "n": len(input["name"])}\n',
    "add": 'def handle(input, ctx):\n    return input["a"] + input["b"]\n',
    "count": (
        "def handle(input, ctx):\n"
        '    n = int(ctx.storage.kv.get("count") or "0") + 1\n'
        '    ctx.storage.kv.set("count", str(n))\n'
        '    return {"count": n}\n'
    ),
    "boom": 'def handle(input, ctx):\n    raise ValueError("no luck")\n',
}
JS_TOOLS = {
    "greet": "export default function (input) {\n"
    '  return { greeting: "Hello, " + input.name, n: input.name.length };\n}\n',
    "add": "export default function (input) {\n  return input.a + input.b;\n}\n",
    "count": "export default async function (input, ctx) {\n"
    '  const n = Number((await ctx.storage.kv.get("count")) ?? "0") + 1;\n'
    '  await ctx.storage.kv.set("count", String(n));\n'
    "  return { count: n };\n}\n",
    "boom": 'export default function () {\n  throw new Error("no luck");\n}\n',
}
SCHEMAS = {
    "greet": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "add": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
}


def _gem(gem: GemBuilder, lang: str = "py") -> Path:
    tools = PY_TOOLS if lang == "py" else JS_TOOLS
    for name, source in tools.items():
        gem.tool(name, source, ext=lang, schema=SCHEMAS.get(name), side_effect="write")
    return gem.write()


def _tool_file(root: Path, name: str) -> Path:
    return next((root / "tools").glob(f"{name}.*"))


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = _tool_file(root, name)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _statuses(out: Any) -> list[str]:
    return out.rows["status"].tolist()


# -- the three formats replay --------------------------------------------------------------
@pytest.mark.parametrize("name", list(FORMATS))
def test_a_conversation_in_each_format_replays_with_every_call_matching(
    name: str, gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem))
    out = bench.replay_conversation(DATA / f"{name}.json")
    assert out.format == FORMATS[name]
    assert out.rows["tool"].tolist() == ORDER
    assert _statuses(out) == ["match"] * 5, "\n".join(out.lines())
    assert out.ok
    assert list(out.rows.columns) == ["n", "call_id", "tool", "status", "diff"]
    assert out.rows["n"].tolist() == [1, 2, 3, 4, 5]
    # the call that failed then and fails now: a match, the messages compared
    assert out.calls[4].result is not None and out.calls[4].result.error is not None
    assert out.lines()[-1].endswith("replays as recorded: match 5")


@pytest.mark.deno
@pytest.mark.parametrize("name", list(FORMATS))
def test_js_tools_in_the_sandbox_replay_each_format(
    name: str, gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem, "js"))
    out = bench.replay_conversation(DATA / f"{name}.json")
    assert _statuses(out) == ["match"] * 5, "\n".join(out.lines())
    # the messages differ (a JS Error is not a Python ValueError): said, still a match
    assert any("no luck" in line for line in out.calls[4].diff) or not out.calls[4].diff


@pytest.mark.parametrize("source", ["path", "text", "list", "dict"])
def test_a_conversation_is_a_path_a_json_text_a_list_or_a_dict(
    source: str, gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    path = DATA / "openai_chat.json"
    data = json.loads(path.read_text())
    given = {"path": str(path), "text": path.read_text(), "list": data["messages"], "dict": data}[source]
    out = opened(_gem(gem)).replay_conversation(given)
    assert _statuses(out) == ["match"] * 5


# -- a changed tool ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FORMATS))
def test_an_edited_tool_makes_the_replay_name_the_call_and_the_value(
    name: str, lang: str, gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    root = _gem(gem, lang)
    _edit(root, "greet", '"Hello, "', '"Hi, "')
    out = opened(root).replay_conversation(DATA / f"{name}.json")
    assert _statuses(out) == ["differs", "match", "match", "match", "match"]
    assert out.calls[0].diff == ['value.greeting: expected "Hello, Ada", got "Hi, Ada"']
    assert not out.ok
    report = out.report()
    assert f"call 1 greet ({out.calls[0].call_id}): differs" in report
    assert 'value.greeting: expected "Hello, Ada", got "Hi, Ada"' in report
    assert "count" not in report  # only the calls that differ


def test_a_result_then_and_an_error_now_is_error_and_the_reverse_differs(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    root = _gem(gem)
    _edit(root, "add", 'return input["a"] + input["b"]', 'raise KeyError("b")')
    _edit(root, "boom", 'raise ValueError("no luck")', 'return "fine"')
    out = opened(root).replay_conversation(DATA / "anthropic.json")
    assert _statuses(out) == ["match", "error", "match", "match", "differs"]
    assert out.calls[1].diff[0].startswith("error: expected 5, got E_TOOL_ERROR: KeyError: ")
    assert out.calls[4].diff == ['value: expected an error ("ValueError: no luck"), got "fine"']


def test_an_error_then_and_another_error_now_matches_and_says_how_the_message_differs(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    root = _gem(gem)
    _edit(root, "boom", 'ValueError("no luck")', 'ValueError("out of luck")')
    out = opened(root).replay_conversation(DATA / "openai_chat.json")
    assert _statuses(out)[4] == "match" and out.ok
    assert out.calls[4].diff == [
        'error.message: expected "ValueError: no luck", got "ValueError: out of luck"'
    ]


def test_state_carries_from_call_to_call_in_order(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem))
    bench.call("count", {})  # the bench is not fresh: the conversation's counts are one off
    out = bench.replay_conversation(DATA / "openai_responses.json")
    assert _statuses(out)[2:4] == ["differs", "differs"]
    assert out.calls[2].diff == ["value.count: expected 1, got 2"]


def test_an_unknown_tool_is_a_row_and_the_other_calls_still_run(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    conv = [
        {"type": "function_call", "call_id": "a", "name": "gret", "arguments": '{"name": "Ada"}'},
        {"type": "function_call", "call_id": "b", "name": "add", "arguments": '{"a": 1, "b": 1}'},
        {"type": "function_call_output", "call_id": "b", "output": "2"},
    ]
    out = opened(_gem(gem)).replay_conversation(conv)
    assert _statuses(out) == ["unknown_tool", "match"]
    assert (
        "no tool 'gret' in gem test.gem" in out.calls[0].diff[0]
        and "did you mean" in out.calls[0].diff[0].lower()
    )
    assert not out.ok


def test_a_call_without_a_result_is_no_result_and_does_not_fail(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    conv = [{"type": "function_call", "call_id": "a", "name": "add", "arguments": '{"a": 1, "b": 2}'}]
    out = opened(_gem(gem)).replay_conversation(conv)
    assert _statuses(out) == ["no_result"] and out.ok
    assert out.calls[0].diff == ["the conversation has no result for this call; today: 3"]


def test_names_map_what_the_model_saw_to_the_gems_tools(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    conv = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "calc_add", "input": {"a": 1, "b": 2}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3"}]},
    ]
    bench = opened(_gem(gem))
    assert _statuses(bench.replay_conversation(conv)) == ["unknown_tool"]
    out = bench.replay_conversation(conv, names={"calc_add": "add"})
    assert _statuses(out) == ["match"] and out.rows["tool"].tolist() == ["add"]
    with pytest.raises(WorkbenchError) as info:
        bench.replay_conversation(conv, names={"calc_add": 5})  # type: ignore[dict-item]
    assert info.value.code == "E_USAGE"


@pytest.mark.deno
def test_an_ekanos_effective_name_finds_its_tool(opened: Callable[..., workbench.Bench]) -> None:
    root = Path(__file__).parent.parent / "notebooks" / "gems" / "buggy-ekanos"
    conv = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "buggy_crm_recent_deals",
                        "input": {"stage": "open"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": '{"deals": [{"id": "d_7", "amount": 800}]}',
                    }
                ],
            },
        ]
    }
    out = opened(root).replay_conversation(conv)
    assert out.rows["tool"].tolist() == ["recent_deals"] and _statuses(out) == ["match"]


def test_the_replay_shows_as_html_escaped(gem: GemBuilder, opened: Callable[..., workbench.Bench]) -> None:
    conv = [
        {"type": "function_call", "call_id": "<b>x</b>", "name": "greet", "arguments": '{"name": "<i>"}'},
        {"type": "function_call_output", "call_id": "<b>x</b>", "output": '{"greeting": "<script>"}'},
    ]
    out = opened(_gem(gem)).replay_conversation(conv)
    html = out._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "differs" in html and "value.greeting" in html


# -- the command line -------------------------------------------------------------------------
def test_cli_prints_the_table_and_exits_0_then_1_once_a_tool_changed(gem: GemBuilder) -> None:
    root = _gem(gem)
    out = cli("conversation", str(root), str(DATA / "anthropic.json"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["n", "status", "tool", "call_id"]
    assert [line.split()[1] for line in lines[1:6]] == ["match"] * 5
    assert lines[-1].endswith("replays as recorded: match 5")
    _edit(root, "add", '+ input["b"]', '- input["b"]')
    out = cli("conversation", str(root), str(DATA / "anthropic.json"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "   2  differs       add    toolu_01Add" in out.stdout
    assert "        value: expected 5, got -1" in out.stdout


def test_cli_save_keeps_a_test_that_gem_workbench_test_passes_then_fails(gem: GemBuilder) -> None:
    root = _gem(gem)
    file = str(DATA / "openai_chat.json")
    out = cli(
        "conversation", str(root), file, "--clock", "2025-01-02T03:04:05Z", "--seed", "7", "--save", "first"
    )
    assert out.returncode == 0, out.stderr
    saved = root / "tests" / "conversations" / "first.json"
    assert "saved: " in out.stderr and saved.is_file()
    case = json.loads(saved.read_text())
    assert case["gem"] == "test.gem" and case["format"] == "openai-chat"
    assert case["options"] == {"clock": "2025-01-02T03:04:05Z", "seed": 7}
    assert [c["tool"] for c in case["calls"]] == ORDER
    assert case["calls"][4]["result"]["content"].startswith('{"error"')
    # the saved case is a transcript too: the command replays it
    assert cli("conversation", str(root), str(saved)).returncode == 0
    run = cli("test", str(root))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
    _edit(root, "greet", '"Hello, "', '"Hi, "')
    run = cli("test", str(root))
    assert run.returncode == 1, run.stdout[-3000:]
    assert "call 1 greet (call_greet1): differs" in run.stdout
    assert 'value.greeting: expected "Hello, Ada", got "Hi, Ada"' in run.stdout
    assert "Traceback" not in run.stdout


def test_pytest_collects_a_saved_conversation_under_nb(gem: GemBuilder, tmp_path: Path) -> None:
    import subprocess
    import sys

    root = _gem(gem)
    assert cli("conversation", str(root), str(DATA / "openai_responses.json"), "--save", "r1").returncode == 0
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(root), "--nb", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:]


def _counts(*expected: int) -> list[dict[str, Any]]:
    """An Anthropic conversation of `count` calls recorded answering `expected`, in order."""
    out: list[dict[str, Any]] = []
    for i, n in enumerate(expected):
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "count", "input": {}}],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": json.dumps({"count": n})}
        out.append({"role": "user", "content": [result]})
    return out


def test_a_state_folder_inside_the_gem_is_saved_relative_and_the_test_starts_from_it(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], tmp_path: Path
) -> None:
    root = _gem(gem)
    bench = opened(root)
    for _ in range(5):
        bench.call("count", {})
    bench.export_state(root / "fixtures" / "five")
    bench.close()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_counts(6, 7)))
    assert cli("conversation", str(root), str(path)).returncode == 1  # from the fixtures: 1, 2
    out = cli(
        "conversation", str(root), str(path), "--state-from", str(root / "fixtures" / "five"), "--save", "s"
    )
    assert out.returncode == 0, out.stdout + out.stderr
    case = json.loads((root / "tests" / "conversations" / "s.json").read_text())
    assert case["options"] == {"state": "fixtures/five"}
    run = cli("test", str(root))
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:]


def test_save_from_python_keeps_the_benchs_frozen_clock_and_seed(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    root = _gem(gem)
    bench = opened(root, clock="2025-03-04T05:06:07Z", seed=11)
    out = bench.replay_conversation(_counts(1, 2), save="py")
    assert out.ok and out.saved == root / "tests" / "conversations" / "py.json"
    case = json.loads(out.saved.read_text())
    assert case["options"] == {"clock": "2025-03-04T05:06:07Z", "seed": 11}
    assert case["format"] == "anthropic" and [c["result"]["content"] for c in case["calls"]] == [
        '{"count": 1}',
        '{"count": 2}',
    ]
    with pytest.raises(WorkbenchError) as info:
        bench.replay_conversation(_counts(1), save="../x")
    assert info.value.code == "E_USAGE"


def test_the_command_replays_on_a_bundles_state(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], tmp_path: Path
) -> None:
    bench = opened(_gem(gem))
    bench.call("count", {})
    bench.call("count", {})
    bundle = bench.export(tmp_path / "two.gemrepro")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_counts(3)))
    out = cli("conversation", str(bundle), str(path), "--trust")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[1].split()[:3] == ["1", "match", "count"]
    refused = cli("conversation", str(bundle), str(path), "--trust", "--save", "x")
    assert refused.returncode == 2 and "not a bundle" in refused.stderr


@pytest.mark.parametrize("name", ["../up", "a/b", "con", ""])
def test_cli_save_with_a_name_that_is_no_file_name_is_exit_2_and_writes_nothing(
    gem: GemBuilder, name: str
) -> None:
    root = _gem(gem)
    out = cli("conversation", str(root), str(DATA / "anthropic.json"), "--save", name)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "gem-workbench conversation: error: pin name" in out.stderr
    assert not (root / "tests").exists()


def test_cli_reads_stdin_and_maps_names(gem: GemBuilder) -> None:
    import subprocess
    import sys

    root = _gem(gem)
    conv = json.dumps(
        [
            {"type": "function_call", "call_id": "x", "name": "plus", "arguments": '{"a": 1, "b": 2}'},
            {"type": "function_call_output", "call_id": "x", "output": "3"},
        ]
    )
    exe = [sys.executable, "-m", "workbench.cli", "conversation", str(root), "-", "--tool-name", "plus=add"]
    out = subprocess.run(exe, input=conv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "match" in out.stdout.splitlines()[1] and " add " in out.stdout.splitlines()[1]
    # a mapping given with --save is kept: the saved case replays with it
    exe += ["--save", "mapped"]
    out = subprocess.run(exe, input=conv, capture_output=True, text=True, timeout=60)
    saved = root / "tests" / "conversations" / "mapped.json"
    assert out.returncode == 0 and json.loads(saved.read_text())["names"] == {"plus": "add"}, out.stderr
    run = cli("test", str(root))
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:]
    bad = cli("conversation", str(root), str(DATA / "anthropic.json"), "--tool-name", "plus")
    assert bad.returncode == 2 and "SEEN=TOOL" in bad.stderr


def test_cli_an_unknown_tool_is_a_row_and_exit_1(gem: GemBuilder, tmp_path: Path) -> None:
    root = _gem(gem)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_chat_call("{}", name="gone_tool")))
    out = cli("conversation", str(root), str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    row = out.stdout.splitlines()[1].split()
    assert row == ["1", "unknown_tool", "gone_tool", "c1"]
    assert "no tool 'gone_tool' in gem test.gem" in out.stdout


# -- hostile transcripts ---------------------------------------------------------------------
def _chat_call(arguments: Any, **fn: Any) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": arguments, **fn}}
    return [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]


def _code(source: Any) -> WorkbenchError:
    with pytest.raises(WorkbenchError) as info:
        read_conversation(source)
    assert info.value.code == "E_CONVERSATION", info.value
    return info.value


def test_a_transcript_over_the_size_bound_is_refused_as_a_file_a_text_and_a_list(tmp_path: Path) -> None:
    big = [{"role": "user", "content": "x" * (10 * 1024 * 1024)}]  # 10 MB
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    for source in (path, json.dumps(big), big):
        err = _code(source)
        assert err.details["limit"] == CONVERSATION_BYTES and f"{CONVERSATION_BYTES:,}" in err.message


def test_a_transcript_10000_levels_deep_is_refused_as_a_file_and_as_a_value(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 10_000 + "]" * 10_000)
    assert "nests deeper than 200 levels" in _code(path).message
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    assert "nested deeper than 200 levels" in _code(deep).message
    err = _code(_chat_call("[" * 10_000 + "]" * 10_000))
    assert err.details["field"] == "messages[1].tool_calls[0].function.arguments"


def test_arguments_that_are_not_json_name_the_message() -> None:
    err = _code(_chat_call("not json"))
    assert err.details["field"] == "messages[1].tool_calls[0].function.arguments"
    assert "messages[1].tool_calls[0].function.arguments is not JSON" in err.message


WRONG_TYPES: dict[str, tuple[Any, str]] = {
    "messages not a list": ({"messages": {"a": 1}}, "messages"),
    "a message that is a number": ([5, {"role": "tool", "tool_call_id": "x"}], "messages[0]"),
    "tool_calls an object": ([{"role": "assistant", "tool_calls": {}}], "messages[0].tool_calls"),
    "a call id that is a number": (
        [{"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": "add", "arguments": "{}"}}]}],
        "messages[0].tool_calls[0].id",
    ),
    "function null": (
        [{"role": "assistant", "tool_calls": [{"id": "c", "function": None}]}],
        "messages[0].tool_calls[0].function",
    ),
    "a name that is a number": (_chat_call("{}", name=5), "messages[1].tool_calls[0].function.name"),
    "arguments that are a number": (_chat_call(5), "messages[1].tool_calls[0].function.arguments"),
    "a custom tool call": (
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "add", "input": "x"}}],
            }
        ],
        "messages[0].tool_calls[0].type",
    ),
    "tool content a number": (
        [*_chat_call("{}"), {"role": "tool", "tool_call_id": "c1", "content": 5}],
        "messages[2].content",
    ),
    "a content block that is a string": (
        [*_chat_call("{}"), {"role": "tool", "tool_call_id": "c1", "content": ["x"]}],
        "messages[2].content[0]",
    ),
    "an answer to no call": (
        [*_chat_call("{}"), {"role": "tool", "tool_call_id": "zz", "content": ""}],
        "messages[2]",
    ),
    "an answer given twice": (
        [*_chat_call("{}"), *[{"role": "tool", "tool_call_id": "c1", "content": ""}] * 2],
        "messages[3]",
    ),
    "one call id twice": ([*_chat_call("{}"), _chat_call("{}")[1]], "messages[2].tool_calls[0]"),
    "tool_use input a list": (
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "add", "input": [1]}]}],
        "messages[0].content[0].input",
    ),
    "is_error a string": (
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]}],
        "messages[0].content[0].is_error",
    ),
    "content an object": (
        [
            {"role": "assistant", "content": {"type": "tool_use"}},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
        ],
        "messages[0].content",
    ),
    "a Responses call without call_id": (
        {"output": [{"type": "function_call", "name": "add", "arguments": "{}"}]},
        "output[0].call_id",
    ),
    "a Responses output that is a number": (
        {"input": [{"type": "function_call_output", "call_id": "a", "output": 1}]},
        "input[0].output",
    ),
    "input an object": ({"input": {"type": "function_call"}}, "input"),
    "a name of 100,000 characters": (
        _chat_call("{}", name="x" * 100_000),
        "messages[1].tool_calls[0].function.name",
    ),
    "an id of 300 characters": (
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t" * 300, "name": "add", "input": {}}],
            }
        ],
        "messages[0].content[0].id",
    ),
    "a saved case with calls an object": ({"conversation": 1, "gem": "g", "calls": {}}, "calls"),
    "a saved case of another format": ({"conversation": 2, "gem": "g", "calls": []}, "conversation"),
    "a saved case without calls": ({"conversation": 1, "gem": "g", "calls": []}, "calls"),
    "a saved case mapping a name to a number": (
        {"conversation": 1, "gem": "g", "names": {"a": 1}, "calls": [{"call_id": "c", "tool": "a"}]},
        "names.a",
    ),
}


@pytest.mark.parametrize("what", list(WRONG_TYPES))
def test_wrong_types_anywhere_are_e_conversation_naming_the_field(what: str) -> None:
    source, field = WRONG_TYPES[what]
    err = _code(source)
    assert err.details["field"] == field, err.message


@pytest.mark.parametrize(
    "source",
    [{"foo": 1}, [{"role": "user", "content": "hi"}], [], "[1, 2, 3]", 42, None, "{}"],
    ids=["an object", "no tool calls", "empty", "numbers", "a number", "None", "an empty object"],
)
def test_what_is_no_transcript_says_what_was_expected(source: Any) -> None:
    err = _code(source)
    if source not in (42, None):
        assert "OpenAI Chat Completions" in err.message or '"messages", "input" or "output"' in err.message
    assert "Traceback" not in err.message


def test_mixed_formats_a_cycle_binary_and_too_many_calls_are_refused(tmp_path: Path) -> None:
    mixed = [*_chat_call("{}"), {"type": "function_call", "call_id": "r", "name": "add", "arguments": "{}"}]
    assert (
        "mixes formats: openai-chat (at messages[1]) and openai-responses (at messages[2])"
        in _code(mixed).message
    )
    cycle: list[Any] = []
    cycle.append(cycle)
    assert "contains itself" in _code(cycle).message
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe[]")
    assert "is not JSON" in _code(tmp_path / "bin.json").message
    many = [
        {"type": "function_call", "call_id": f"c{i}", "name": "add", "arguments": "{}"}
        for i in range(MAX_CALLS + 1)
    ]
    err = _code(many)
    assert err.details["limit"] == MAX_CALLS and err.details["field"] == f"messages[{MAX_CALLS}]"


def test_a_fifo_or_a_missing_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    assert "cannot be read" in _code(tmp_path / "fifo.json").message
    assert "cannot be read" in _code(tmp_path / "missing.json").message


def test_a_saved_case_of_another_gem_or_with_options_it_does_not_keep_is_refused(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], tmp_path: Path
) -> None:
    bench = opened(_gem(gem))
    call = {"call_id": "c", "tool": "add", "arguments": {"a": 1, "b": 1}, "result": {"content": "2"}}
    case = {"conversation": 1, "gem": "other.gem", "calls": [call]}
    with pytest.raises(WorkbenchError) as info:
        bench.replay_conversation(case)
    assert info.value.code == "E_CONVERSATION" and info.value.details["field"] == "gem"
    from workbench.conversations.case import open_options

    with pytest.raises(WorkbenchError) as info:
        open_options({"secrets": {"K": "v"}}, tmp_path)
    assert info.value.code == "E_CONVERSATION" and "secrets" in info.value.message


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("10 MB", json.dumps([{"role": "user", "content": "x" * (10 * 1024 * 1024)}])),
        ("deep", "[" * 10_000 + "]" * 10_000),
        ("not json arguments", json.dumps(_chat_call("not json"))),
        ("wrong types", json.dumps({"messages": [{"role": "assistant", "tool_calls": [{"id": 1}]}]})),
        ("not a transcript", '{"hello": "world"}'),
    ],
)
def test_cli_hostile_transcripts_are_one_coded_error_no_traceback(
    gem: GemBuilder, tmp_path: Path, what: str, text: str
) -> None:
    root = _gem(gem)
    path = tmp_path / "t.json"
    path.write_text(text)
    out = cli("conversation", str(root), str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.startswith("error E_CONVERSATION: "), out.stderr[:500]
    assert json.loads(out.stderr.splitlines()[1])["error"]["code"] == "E_CONVERSATION"
