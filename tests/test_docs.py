"""The docs: the site builds offline with `mkdocs build --strict`, the README's tour and the
write-your-first-gem pages run as written, every rule ID has an anchor, and each platform's ctx
page lists exactly its capability registry.

Code blocks of the pages in RUNNABLE run in order in a temporary folder (the example gems they
name copied into `notebooks/gems/`): ```python blocks are executed in one namespace per page; a
block with `title="path"` is written to that path instead (a tool file, a manifest, a test); a
shell block runs only under `<!-- docs-test: run -->`, and any block under
`<!-- docs-test: skip (why) -->` is left out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GEMS = ROOT / "notebooks" / "gems"

#: page -> the example gems its blocks open
RUNNABLE = {
    "README.md": ["notes"],
    "docs/index.md": ["notes"],
    "docs/pins.md": ["notes"],
    "docs/conversations.md": ["notes"],
    "docs/bundles.md": ["notes"],
    "docs/doctor.md": ["buggy", "notes"],
    "docs/debugging.md": [],
    "docs/platforms.md": [],
    "docs/first-gem/notochord.md": [],
    "docs/first-gem/agent.md": [],
    "docs/first-gem/ekanos.md": [],
}
NEEDS_DENO = {
    "docs/doctor.md",
    "docs/debugging.md",
    "docs/first-gem/notochord.md",
    "docs/first-gem/agent.md",
    "docs/first-gem/ekanos.md",
}

FENCE = re.compile(r"^```(?P<lang>[\w+-]*)(?P<attrs>.*)$")
MARKER = re.compile(r"^<!-- docs-test: (?P<what>\w+)\b.*-->$")
TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass
class Block:
    lang: str
    title: str | None
    marker: str | None
    code: str
    line: int


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of Markdown text, with their title and docs-test marker."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        before = next((s.strip() for s in reversed(lines[:i]) if s.strip()), "")
        marker = MARKER.match(before)
        title = TITLE.search(m["attrs"])
        start = i + 1
        i = start
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        out.append(
            Block(
                m["lang"],
                title["title"] if title else None,
                marker["what"] if marker else None,
                "\n".join(lines[start:i]) + "\n",
                start,
            )
        )
        i += 1
    return out


def _run_page(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench

    for gem in RUNNABLE[page]:
        shutil.copytree(GEMS / gem, tmp_path / "notebooks" / "gems" / gem)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ns: dict[str, Any] = {"__name__": "__docs__"}
    ran = 0
    try:
        for b in blocks((ROOT / page).read_text(encoding="utf-8")):
            where = f"{page}:{b.line}"
            assert b.marker in (None, "skip", "run"), f"{where}: unknown docs-test marker {b.marker!r}"
            if b.marker == "skip":
                continue
            if b.title:
                target = tmp_path / b.title
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(b.code, encoding="utf-8")
            elif b.lang == "python":
                exec(compile(b.code, where, "exec"), ns)  # noqa: S102 - the docs' own code
                ran += 1
            elif b.marker == "run":
                assert b.lang in ("sh", "bash"), f"{where}: only shell blocks run as commands"
                proc = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", b.code],
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert proc.returncode == 0, f"{where}: {b.code}\n{proc.stdout}\n{proc.stderr}"
                ran += 1
    finally:
        for value in list(ns.values()):
            if isinstance(value, workbench.Bench):
                value.close()
    assert ran, f"{page}: no block ran"


@pytest.mark.parametrize("page", [p for p in RUNNABLE if p not in NEEDS_DENO])
def test_page_code_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_page(page, tmp_path, monkeypatch)


@pytest.mark.deno
@pytest.mark.parametrize("page", sorted(NEEDS_DENO))
def test_first_gem_page_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_page(page, tmp_path, monkeypatch)


def _tour(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    return next(b.code for b in blocks(text[text.index("## A 5-minute tour") :]) if b.lang == "python")


def test_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 10_000, "the README links to the docs for the reference"
    assert _tour(ROOT / "README.md") == _tour(DOCS / "index.md"), "the two tours drifted apart"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/run" in readme and ".venv/bin/pip install -q -e '.[test]'" in ci
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), f"README links to a missing page: {link}"


# -- rules -----------------------------------------------------------------------------------

RULE_ID = re.compile(r"\b(?:SEC|N|F|D|E|R|A|K)[0-9]{1,2}\b")
NOQA = re.compile(r"#\s*noqa\b.*$|#\s*type:\s*ignore\b.*$")


def rule_ids_used() -> dict[str, str]:
    """Every rule ID in the package's sources and the docs, with one place it is used."""
    used: dict[str, str] = {}
    files = [*sorted((ROOT / "workbench").rglob("*.py")), *sorted((ROOT / "workbench").rglob("*.ts"))]
    files += [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for rid in RULE_ID.findall(NOQA.sub("", line)):
                used.setdefault(rid, f"{f.relative_to(ROOT)}:{n}")
    return used


def test_every_rule_id_has_an_anchor_on_the_rules_page() -> None:
    anchors = set(re.findall(r"\{#([A-Z]+[0-9]+)\}", (DOCS / "rules.md").read_text(encoding="utf-8")))
    missing = {rid: where for rid, where in rule_ids_used().items() if rid not in anchors}
    assert not missing, f"rule IDs without an anchor in docs/rules.md: {missing}"


# -- ctx reference -----------------------------------------------------------------------------


def _signatures(profile: Any) -> set[str]:
    """The ctx reference's signature of every method of every capability, as written in the
    docs: `ctx.files.read(path, options)` (a `?` for optional parameters is dropped)."""
    out = set()
    for cap in profile.capabilities:
        if cap.kind == "value":
            out.add(f"ctx.{cap.path}")
        elif cap.kind == "dispatch":
            out.add(f"ctx.{cap.path}.<name>(input)")
        for m in cap.methods:
            params = ", ".join(m.params[1:] if cap.kind == "collection" else m.params)
            if cap.kind == "namespace":
                out.add(f"ctx.{cap.path}.{m.name}({params})")
            elif cap.kind == "collection":
                out.add(f"ctx.{cap.path}.collection(name).{m.name}({params})")
            elif cap.kind == "function":
                out.add(f"ctx.{cap.path}({params})")
    return out


def _documented(page: Path) -> set[str]:
    """The signatures a ctx page lists: each bullet that starts with a `ctx.…` code span."""
    text = page.read_text(encoding="utf-8")
    return {m.replace("?", "") for m in re.findall(r"^- `(ctx\.[^`]+)`", text, flags=re.M)}


@pytest.mark.parametrize("name", ["notochord", "agent", "ekanos"])
def test_ctx_page_lists_the_registry(name: str) -> None:
    from workbench import platforms

    builtins = set(platforms.registry()) & set(platforms.KNOWN)
    assert builtins == {"notochord", "agent", "ekanos"}, "a new built-in platform needs its ctx page"
    profile = platforms.registry()[name]
    expected, documented = _signatures(profile), _documented(DOCS / "ctx" / f"{name}.md")
    assert expected - documented == set(), f"docs/ctx/{name}.md does not list these"
    assert documented - expected == set(), f"docs/ctx/{name}.md lists what the registry has not"


# -- the site ----------------------------------------------------------------------------------


def test_mkdocs_build_strict_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rules = (site / "rules.html").read_text(encoding="utf-8")
    for rid in rule_ids_used():
        assert f'id="{rid}"' in rules, rid
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in html and "fonts.gstatic.com" not in html, page
