"""What `gem-workbench new --platform ekanos` writes: integration.ts (or .js) with one tool
that greets and counts in account storage, and its deno test (K7)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..base import Scaffold, fill_template

TEMPLATES = Path(__file__).parent / "templates"


def files(values: Mapping[str, str]) -> dict[str, str]:
    """{relative path: text}: integration.<ext> and tests/<tool>.test.ts."""
    return {
        f"integration.{values['ext']}": fill_template(
            TEMPLATES / f"integration.{values['ext']}.tmpl", values
        ),
        f"tests/{values['tool']}.test.ts": fill_template(TEMPLATES / "tool.test.ts.tmpl", values),
    }


SCAFFOLD = Scaffold(
    files=files,
    call={"name": "Ada"},
    asserts=('res.value == {"greeting": "Hello, Ada!", "count": 1}',),
    state="bench.account_storage()",
    langs=("ts", "js"),
    langs_note="Ekanos integrations are TypeScript or JavaScript (integration.ts)",
    own_test="tests/{tool}.test.ts (deno test)",
)
