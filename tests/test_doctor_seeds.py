"""The doctor's search starts from what the gem knows: the file names of its fixtures, its
stored keys and ids, its pinned-case inputs and the recipients the user allowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

IMPORT_SALES = """
async def handle(input, ctx):
    name = input["file"]
    if name != "sales.csv":
        return {"imported": 0}
    text = await ctx.files.read("workspace:" + name)
    sales = ctx.data.collection("sales")
    rows = [line.split(",") for line in text.strip().splitlines()[1:]]
    for region, units in rows:
        await sales.insert({"region": region, "units": int(units)})  # no idempotency key: N7
    return {"imported": len(rows)}
"""

LOOKUP = """
def handle(input, ctx):
    if input["code"] == "ACME-7731-Z":
        raise ValueError("the legacy code path")
    return {"found": False}
"""

FILE = {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}


def _sales_gem(gem):
    gem.tool("import_sales", IMPORT_SALES, schema=FILE).collections(sales=[])
    workspace = gem.root / "fixtures" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "sales.csv").write_text("region,units\nnorth,4\nsouth,7\n")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "readme.txt").write_text("hello\n")
    return gem


def test_the_doctor_reaches_an_insert_done_only_for_an_existing_file(gem, opened) -> None:
    bench = opened(_sales_gem(gem))
    report = bench.doctor(examples=40, seed=1, write=False)
    [n7] = report.findings
    assert (n7.tool, n7.kind, n7.input) == ("import_sales", "N7", {"file": "sales.csv"})
    assert "document sales" in n7.message and report.seeds >= 3


def test_a_pinned_case_input_is_tried_first(gem, opened) -> None:
    gem.tool(
        "lookup",
        LOOKUP,
        schema={"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
        side_effect="read",
    )
    cases = gem.root / "tests" / "calls" / "lookup"
    cases.mkdir(parents=True)
    (cases / "legacy.json").write_text(json.dumps({"tool": "lookup", "input": {"code": "ACME-7731-Z"}}))
    report = opened(gem).doctor(examples=20, seed=3, write=False)
    assert [(f.tool, f.kind, f.input) for f in report.findings] == [
        ("lookup", "throw", {"code": "ACME-7731-Z"})
    ]


def test_the_seeds_are_file_names_keys_ids_and_pinned_strings(gem, opened) -> None:
    from workbench.doctor.seeds import gather, seeded_examples

    gem.tool(
        "remember",
        "async def handle(input, ctx):\n"
        "    await ctx.storage.kv.set('prefs/theme', 'dark')\n"
        "    return await ctx.data.collection('sales').insert({'region': 'west'})\n",
    )
    _sales_gem(gem)
    cases = gem.root / "tests" / "calls" / "import_sales"
    cases.mkdir(parents=True)
    (cases / "q3.json").write_text(json.dumps({"tool": "import_sales", "input": {"file": "q3/sales.csv"}}))
    (cases / "broken.json").write_text("{ not json")  # the replay reports it; the doctor skips it
    bench = opened(gem)
    doc = bench.call("remember", {}).value
    seeds = gather(bench)
    for known in (
        "sales.csv",
        "notes/readme.txt",
        "readme.txt",
        "prefs/theme",
        "sales",
        doc["id"],
        "q3/sales.csv",
    ):
        assert known in seeds.strings
    assert seeds.pinned == {"import_sales": [{"file": "q3/sales.csv"}]}
    # the pinned strings come first, then one of each source in turn
    assert seeds.strings[:2] == ["q3/sales.csv", "notes"]
    tried = seeded_examples(FILE, {"file": ""}, seeds)
    assert {"file": "sales.csv"} in tried and len(tried) <= 16


def test_allowed_recipients_and_accounts_are_seeds(gem, opened) -> None:
    from workbench.doctor.seeds import gather

    gem.tool("noop", "def handle(input, ctx):\n    return {}\n", side_effect="read")
    gem.as_agent()
    bench = opened(gem)
    bench.allow_recipients("*@example.com", "ops@acme.example")
    assert {"team@example.com", "ops@acme.example"} <= set(gather(bench).strings)


@pytest.mark.deno
def test_ekanos_account_records_are_seeds_by_the_key_the_tool_uses(opened) -> None:
    from test_ekanos import ACME, LOCATION

    from workbench.doctor.seeds import gather

    bench = opened(ACME, account_storage={"settings/location": LOCATION}, secrets={"api_key": "sk_x"})
    strings = gather(bench).strings
    assert "settings/location" in strings and "sk_x" not in strings


@pytest.mark.deno  # (the gem's JS tools start the sandbox at open)
def test_mailbox_accounts_and_message_ids_are_seeds(opened) -> None:
    from workbench.doctor.seeds import gather

    gem = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "mail-digest"
    bench = opened(gem)
    bench.email.allow(["work"])
    strings = gather(bench).strings
    assert {"work", "w01"} <= set(strings)
