"""Write a new gem folder from the templates (package data in `templates/`).

Everything is written into a temporary sibling folder that is renamed into place at the end,
so a failure leaves nothing half-made, and an existing non-empty folder is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..gem.names import slug_problem

TEMPLATES = Path(__file__).parent / "templates"
TOOL = re.compile(r"^[a-z][a-z0-9_]{0,62}\Z")
EXT = {"ts": "ts", "js": "js", "py": "py"}
SCHEMA_REF = "./.gem-workbench/manifest.schema.json"


class ScaffoldError(Exception):
    """A usage error of `gem-workbench new` (exit 2): the message says what to change."""


def _check(name: str, platform: str, lang: str, tool: str, target: Path) -> None:
    why = slug_problem(name)  # the loaders' rule for an id and an Ekanos slug: else it could not be opened
    if why:
        raise ScaffoldError(
            f"gem name {why}; choose another, e.g. my-gem: it names the folder, the gem's id and, "
            "for Ekanos, the integration's slug"
        )
    if not TOOL.match(tool):
        raise ScaffoldError(
            f"--tool {tool!r}: a tool name is lowercase snake_case (^[a-z][a-z0-9_]*$), e.g. hello"
        )
    if platform == "ekanos" and lang == "py":
        raise ScaffoldError(
            "--lang py --platform ekanos: Ekanos integrations are TypeScript or JavaScript "
            "(integration.ts); use --lang ts or --lang js, or a Python tool on --platform notochord or agent"
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        what = "a file" if not target.is_dir() else "a folder that is not empty"
        raise ScaffoldError(f"{target} is {what}: choose another name or --dir, or remove it first")


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def _template(rel: str, values: dict[str, str]) -> str:
    return _fill((TEMPLATES / f"{rel}.tmpl").read_text(encoding="utf-8"), values)


def _notochord_manifest(name: str, title: str, tool: str, file: str) -> dict[str, Any]:
    return {
        "$schema": SCHEMA_REF,
        "id": name,
        "name": title,
        "version": "0.1.0",
        "platform": "notochord",
        "description": f"{title}: a new gem (gem-workbench new).",
        "tools": [
            {
                "name": tool,
                "file": file,
                "description": "Greet someone; count the greetings in kv; read workspace:welcome.txt if present.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                "sideEffect": "write",
            }
        ],
    }


def _agent_manifest(name: str, title: str, tool: str, file: str) -> dict[str, Any]:
    return {
        "$schema": SCHEMA_REF,
        "platform": "agent",
        "id": name,
        "name": title,
        "version": "0.1.0",
        "description": f"{title}: a new agent custom tool (gem-workbench new).",
        "agent": {"id": f"agent-{name}", "name": title},
        "builtins": ["calculate", "web_search"],
        "tools": [
            {
                "name": tool,
                "file": file,
                "description": "Add two numbers with the calculate built-in.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
            }
        ],
    }


#: per platform: the input of the first call and what the notebook and the test assert on it
CALLS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "notochord": (
        {"name": "Ada"},
        [
            'res.value["greeting"] == "Hello, Ada!"',
            'res.value["count"] == 1',
            'res.value["note"].startswith("Welcome")',
        ],
    ),
    "agent": ({"a": 2, "b": 3}, ['res.value["sum"] == 5']),
    "ekanos": ({"name": "Ada"}, ['res.value == {"greeting": "Hello, Ada!", "count": 1}']),
}


def _notebook(name: str, platform: str, tool: str) -> str:
    data, asserts = CALLS[platform]

    def code(src: str) -> dict[str, Any]:
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    def md(src: str) -> dict[str, Any]:
        return {"cell_type": "markdown", "metadata": {}, "source": src}

    state = {"notochord": "bench.kv()", "agent": "bench.audit()", "ekanos": "bench.account_storage()"}[
        platform
    ]
    cells = [
        md(
            f"# {name}\n\nOpens the gem in this folder with mock providers and calls `{tool}`. "
            "Run all cells; `gem-workbench test` runs this notebook as a test."
        ),
        code('import workbench\n\nbench = workbench.open(".")\nbench.tools()'),
        code(f"res = bench.call({tool!r}, {json.dumps(data)})\nres"),
        code("\n".join(["assert res.ok, res.error", *(f"assert {a}" for a in asserts)])),
        md("What the call left behind:"),
        code(state),
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Gem Workbench", "language": "python", "name": "gem-workbench"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, cell in enumerate(cells):
        cell["id"] = f"{name[:20]}-{i}"
    return json.dumps(nb, indent=1) + "\n"


def _files(name: str, platform: str, lang: str, tool: str) -> dict[str, str]:
    """{relative path: text} of the new gem, but .gem-workbench/ (made from its manifest)."""
    title = " ".join(part.capitalize() for part in name.split("-"))
    values = {"name": name, "title": title, "tool": tool, "ext": lang}
    out: dict[str, str] = {f"{name}.ipynb": _notebook(name, platform, tool)}
    if platform == "ekanos":
        out[f"integration.{lang}"] = _template(f"ekanos/integration.{lang}", values)
        out[f"tests/{tool}.test.ts"] = _template("ekanos/tool.test.ts", values)
        return out
    file = f"tools/{tool}.{EXT[lang]}"
    make = _notochord_manifest if platform == "notochord" else _agent_manifest
    out["manifest.json"] = json.dumps(make(name, title, tool, file), indent=2) + "\n"
    out[file] = _template(f"{platform}/tool.{lang}", values)
    if platform == "notochord":
        out["fixtures/workspace/welcome.txt"] = _template("notochord/welcome.txt", values)
    else:
        out["fixtures/web_search.json"] = _template("agent/web_search.json", values)
    data, asserts = CALLS[platform]
    # named after the gem too: pytest cannot collect two tests/test_hello.py in one run
    out[f"tests/test_{name.replace('-', '_')}_{tool}.py"] = _template(
        "common/test_tool.py",
        {**values, "input": repr(data), "asserts": "\n".join(f"        assert {a}" for a in asserts)},
    )
    return out


def create(
    name: str,
    *,
    platform: str = "notochord",
    lang: str | None = None,
    parent: str | os.PathLike[str] = ".",
    tool: str = "hello",
) -> Path:
    """Create the gem folder `parent/name`; its path. ScaffoldError on a bad name or target."""
    from ..platforms import load
    from ..types import FOLDER, gem_files

    lang = lang or "ts"
    if platform not in ("notochord", "agent", "ekanos"):
        raise ScaffoldError(f"--platform {platform!r}: use notochord, agent or ekanos")
    if lang not in EXT:
        raise ScaffoldError(f"--lang {lang!r}: use ts, js or py")
    target = Path(parent) / name
    _check(name, platform, lang, tool, target)
    Path(parent).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 is for a temporary folder, not the gem
    try:
        for rel, text in _files(name, platform, lang, tool).items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        manifest = load(tmp)  # the new gem loads as it is, or this is a bug here
        (tmp / FOLDER).mkdir()
        for fname, text in gem_files(manifest).items():
            (tmp / FOLDER / fname).write_text(text, encoding="utf-8")
        if target.is_dir():
            target.rmdir()  # empty (checked): rename cannot replace it otherwise
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def next_steps(folder: Path, *, platform: str, tool: str) -> str:
    """What to do with the new gem, printed by `gem-workbench new`."""
    data, _ = CALLS[platform]
    test = (
        f"  gem-workbench test {folder}           # tests/{tool}.test.ts (deno test) and the notebook"
        if platform == "ekanos"
        else f"  python -m pytest {folder}/tests       # the test\n"
        f"  gem-workbench test {folder}           # the notebook, as a test"
    )
    return "\n".join(
        [
            f"Created {folder} ({platform}). Next:",
            f"  gem-workbench check {folder} --typecheck",
            f"  gem-workbench call {folder} {tool} --input '{json.dumps(data)}'",
            test,
            f"  gem-workbench lab {folder}            # open {folder.name}.ipynb in JupyterLab",
            f"Types for editors are in {folder}/.gem-workbench/ (the ctx"
            + (")." if platform == "ekanos" else ", the manifest's JSON Schema)."),
        ]
    )
