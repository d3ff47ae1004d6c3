"""Write a new gem folder: the platform's own files from its profile's `Scaffold` (templates
in workbench/platforms/<name>/templates/ or the plugin's package), and what every gem gets
here: the notebook, `.gem-workbench/` and a pytest test (`templates/common/`).

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

from .._errors import UsageError
from ..gem.names import slug_problem
from ..platforms import Profile, registry
from ..platforms.base import Scaffold, fill_template

TEMPLATES = Path(__file__).parent / "templates"
TOOL = re.compile(r"^[a-z][a-z0-9_]{0,62}\Z")
EXT = {"ts": "ts", "js": "js", "py": "py"}
LANG_NAMES = {"py": "Python", "ts": "TypeScript", "js": "JavaScript"}


class ScaffoldError(UsageError):
    """A usage error of `gem-workbench new` (exit 2): the message says what to change."""


def _check(name: str, prof: Profile, lang: str, tool: str, target: Path) -> None:
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
    spec = _scaffold(prof)
    if lang not in spec.langs:
        others = [n for n, p in registry().items() if p.scaffold is not None and lang in p.scaffold.langs]
        raise ScaffoldError(
            f"--lang {lang} --platform {prof.name}: {spec.langs_note or f'{prof.title} have no {lang} tools'}; "
            f"use {' or '.join(f'--lang {x}' for x in spec.langs)}"
            + (f", or a {LANG_NAMES.get(lang, lang)} tool on --platform {_or(others)}" if others else "")
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        what = "a file" if not target.is_dir() else "a folder that is not empty"
        raise ScaffoldError(f"{target} is {what}: choose another name or --dir, or remove it first")


def _template(rel: str, values: dict[str, str]) -> str:
    return fill_template(TEMPLATES / f"{rel}.tmpl", values)


def _scaffold(prof: Profile) -> Scaffold:
    if prof.scaffold is None:
        raise ScaffoldError(
            f"--platform {prof.name}: {prof.title} cannot be scaffolded (its profile has no scaffold)"
        )
    return prof.scaffold


def _profile(platform: str) -> Profile:
    """The registry's profile of `platform`, or a UsageError listing the registry."""
    profiles = registry()
    if platform not in profiles:
        raise ScaffoldError(f"--platform {platform!r}: use {_or(list(profiles))}")
    return profiles[platform]


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def first_call(platform: str) -> tuple[dict[str, Any], list[str]]:
    """The input of a new gem's first call and what its notebook and test assert on it."""
    spec = _scaffold(_profile(platform))
    return dict(spec.call), list(spec.asserts)


def _notebook(name: str, platform: str, tool: str) -> str:
    data, asserts = first_call(platform)

    def code(src: str) -> dict[str, Any]:
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    def md(src: str) -> dict[str, Any]:
        return {"cell_type": "markdown", "metadata": {}, "source": src}

    state = _scaffold(_profile(platform)).state
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
    spec = _scaffold(_profile(platform))
    title = " ".join(part.capitalize() for part in name.split("-"))
    values = {"name": name, "title": title, "tool": tool, "ext": lang}
    out: dict[str, str] = {f"{name}.ipynb": _notebook(name, platform, tool)}
    out.update(spec.files(values))
    if spec.own_test:
        return out
    data, asserts = first_call(platform)
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
    from ..types import FOLDER, refresh

    lang = lang or "ts"
    prof = _profile(platform)
    if lang not in EXT:
        raise ScaffoldError(f"--lang {lang!r}: use ts, js or py")
    target = Path(parent) / name
    _check(name, prof, lang, tool, target)
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
        made = refresh(manifest, create=True)  # .gem-workbench/ with its stamp
        if made.state != "created":
            raise ScaffoldError(f"{target}/{FOLDER}: {made.reason or made.state}")
        if target.is_dir():
            target.rmdir()  # empty (checked): rename cannot replace it otherwise
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def next_steps(folder: Path, *, platform: str, tool: str) -> str:
    """What to do with the new gem, printed by `gem-workbench new`."""
    spec = _scaffold(_profile(platform))
    data, _ = first_call(platform)
    test = (
        f"  gem-workbench test {folder}           # {spec.own_test.format(tool=tool)} and the notebook"
        if spec.own_test
        else f"  python -m pytest {folder}/tests       # the test\n"
        f"  gem-workbench test {folder}           # the notebook, as a test"
    )
    schema = (folder / ".gem-workbench" / "manifest.schema.json").is_file()
    return "\n".join(
        [
            f"Created {folder} ({platform}). Next:",
            f"  gem-workbench check {folder} --typecheck",
            f"  gem-workbench call {folder} {tool} --input '{json.dumps(data)}'",
            test,
            f"  gem-workbench lab {folder}            # open {folder.name}.ipynb in JupyterLab",
            f"Types for editors are in {folder}/.gem-workbench/ (the ctx"
            + (", the manifest's JSON Schema)." if schema else ")."),
        ]
    )
