"""The Face reaches no capability's backend by a name: outside workbench/ctx/, no
`providers.backends["…"]` nor `.backends.get("…")` (a capability's module offers a narrow
function, or `ctx.spec.backend_of(providers, SPEC)`); and every part of a bench's state is
declared on a capability's spec, so `ctx.state.parts_of` lists them for each platform."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.ctx import state
from workbench.platforms import profile

ROOT = Path(__file__).resolve().parent.parent / "workbench"
STRING_KEYED = re.compile(r"""backends(?:\[|\.get\()\s*['"]""")


def string_keyed(root: Path, skip: set[str]) -> list[str]:
    """`file:line` of each string-keyed backend reach under `root`, outside ctx/ and `skip`."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("ctx/") or rel in skip:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if STRING_KEYED.search(line):
                hits.append(f"{rel}:{n}")
    return hits


def test_no_string_keyed_backend_reach_outside_ctx() -> None:
    assert string_keyed(ROOT, set()) == []


def test_the_grep_sees_a_string_keyed_reach(tmp_path: Path) -> None:
    (tmp_path / "_views.py").write_text(
        'x = p.backends["tools"]\ny = p.backends.get( "http")\nz = p.backends[spec.impl]\n'
    )
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "tools.py").write_text('x = p.backends["tools"]\n')
    assert string_keyed(tmp_path, set()) == ["_views.py:1", "_views.py:2"]


DOC = ROOT.parent / "docs" / "state.md"


def documented() -> dict[str, list[tuple[str, str]]]:
    """{platform: [(part, role)]} of docs/state.md's table, in its order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2] in ("state", "setup", "log"):
            out.setdefault(cells[0], []).append((cells[1], cells[2]))
    return out


@pytest.mark.parametrize("platform", ["notochord", "agent", "ekanos"])
def test_the_state_page_lists_each_platforms_parts_as_its_capabilities_declare(platform: str) -> None:
    declared = [(p.name, p.role) for p, _ in state.parts_of(profile(platform))]
    assert documented()[platform] == declared
