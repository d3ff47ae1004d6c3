"""`gem-workbench check`: every problem that would stop a gem's tools from running, found
without calling them (issue 13).

1. The gem's format, as `workbench.open` checks it (its platform's `lint`).
2. Every tool loads: a Python tool parses and defines its entry function (read with `ast`, not
   run); a JS/TS tool is imported in a read-only Deno Worker (as the sandbox would, top-level
   code included) and must export its entry function — syntax errors, a missing export, and
   `npm:` / `jsr:` / `https:` imports (N4) are reported with file:line.
3. With `typecheck=True`, TypeScript tools pass `deno check`.
4. The gem's fixtures (fixtures/mailbox.json, fixtures/web_search.json, …) load: each
   capability reads its own with the providers' code the first call would run (its
   `CapabilitySpec.fixtures`), so a bad date is reported here, with its file and field.

Each problem is {file, message} with `line` or `pointer` when known. Never raises for a bad gem.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import WorkbenchError
from .types import refresh_quietly

if TYPE_CHECKING:
    from .gem import Manifest, ToolSpec
    from .platforms import Profile

Problem = dict[str, Any]
ENTRY_FILES = ("manifest.json", "integration.ts", "integration.js")
_REMOTE = re.compile(r"""(?:from|import)\s*\(?\s*["']((?:npm|jsr|https?|node):[^"']*)["']""")


def gem_folder(path: str | os.PathLike[str]) -> tuple[Path | None, str]:
    """The gem folder `path` names (itself, or the folder of its manifest.json or
    integration.ts), or (None, why it names none)."""
    p = Path(path)
    if p.is_dir():
        return p, ""
    if p.is_file() and p.name in ENTRY_FILES:
        return p.parent, ""
    if p.exists():
        return None, (
            f"{p} is a file; give a gem folder (with manifest.json), an Ekanos integration folder "
            "(with integration.ts), or the path of either file"
        )
    return None, f"{p} does not exist: give a gem folder (with manifest.json or integration.ts){_near_gem(p)}"


def _near_gem(p: Path, limit: int = 2_000) -> str:
    """ "; did you mean 'csvstats'?" for a gem folder beside `p` its name likely misspells (the
    first `limit` entries of the parent looked at: a huge folder costs no more)."""
    from itertools import islice

    from .gem.near import close_key

    try:
        names = [e.name for e in islice(os.scandir(p.parent), limit) if e.is_dir()]
    except OSError:
        return ""
    for _ in range(5):  # the nearest few names; a gem folder among them
        near = close_key(p.name, names)
        if near is None:
            break
        folder = p.parent / near
        if any((folder / f).is_file() for f in ENTRY_FILES[:2]):  # a gem, not any folder
            return f"; did you mean {str(folder)!r}?"
        names.remove(near)
    return ""


def check(path: str | os.PathLike[str], *, typecheck: bool = False) -> list[Problem]:
    """Every problem of the gem at `path` (a folder or its manifest.json/integration.ts)."""
    from .platforms import detect, lint

    folder, why = gem_folder(path)
    if folder is None:
        return [{"file": str(path), "message": why}]
    problems: list[Problem] = list(lint(folder))
    if problems:
        return problems
    try:
        profile = detect(folder)
        manifest = profile.load(folder)
        refresh_quietly(manifest)  # the editor's .gem-workbench/ types, when stale
    except WorkbenchError as exc:  # changed since lint
        return [{"file": str(folder), "message": exc.message}]
    problems += [p for t in manifest.tools.values() if t.language == "python" for p in _python(t, profile)]
    if profile.entry.js_member is None:  # Ekanos' module was imported by its loader already
        js = [t for t in manifest.tools.values() if t.language in ("javascript", "typescript")]
        problems += _js(js, manifest, profile)
    if typecheck and not problems:
        problems += _typecheck(manifest, profile)
    return problems + _fixtures(manifest, profile)


def _fixtures(manifest: Manifest, profile: Profile) -> list[Problem]:
    """What each capability of the platform says of the gem's fixtures, as E_… problems
    naming the file and the field."""
    from itertools import islice

    folder = manifest.root / "fixtures"
    try:  # the capabilities' fixtures are files in fixtures/: a gem with none skips the ctx
        # layer's import (check's start-up: docs/benchmarks.md); a huge folder is looked into once
        if not any(p.is_file() for p in islice(folder.iterdir(), 1000)):
            return []
    except OSError:
        return []
    from .ctx import specs_of

    out: list[Problem] = []
    for spec in specs_of(profile):
        if spec.fixtures is None:
            continue
        try:
            spec.fixtures(manifest.root)
        except WorkbenchError as exc:
            out.append(_fixture_problem(exc, manifest.root))
    return out


def _fixture_problem(exc: WorkbenchError, root: Path) -> Problem:
    """{file, pointer, message}: the message without the file and pointer it starts with (the
    CLI prints them before it), with its code."""
    given = str(exc.details.get("file") or root)
    try:
        file = Path(given).relative_to(root).as_posix()
    except ValueError:
        file = given
    pointer = exc.details.get("pointer")
    message = exc.message
    for lead in (given, file, pointer):
        if lead and message.startswith(lead):
            message = message[len(lead) :].lstrip(" :")
    return {"file": file, **({"pointer": pointer} if pointer else {}), "message": f"{exc.code}: {message}"}


def _python(tool: ToolSpec, profile: Profile) -> list[Problem]:
    name = profile.entry.python
    try:
        source = tool.file.read_bytes()
        tree = ast.parse(source, filename=str(tool.file))
    except SyntaxError as exc:
        return [{"file": tool.rel_file, "line": exc.lineno, "message": f"SyntaxError: {exc.msg}"}]
    except (OSError, ValueError, RecursionError) as exc:
        return [{"file": tool.rel_file, "message": f"cannot read the tool: {exc}"}]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return []
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return []
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return []
    return [
        {
            "file": tool.rel_file,
            "message": f"no `{name}` function: write `def {name}(input, ctx):` (or `async def`) at the "
            "module's top level",
        }
    ]


def _js(tools: list[ToolSpec], manifest: Manifest, profile: Profile) -> list[Problem]:
    if not tools:
        return []  # (and none of the imports below: start-up)
    from ._deno import ProbeError, probe
    from .ctx.stores import default_state_dir
    from .gem.links import GemLinks
    from .runners.deno.entry import entry_file

    links = GemLinks(manifest.root).check()  # N1: Deno would follow a link out of the folder
    if links is not None:
        return [{"file": str(manifest.root), "message": links.message}]
    entry = profile.entry
    files = [entry_file(t.file, entry.js_exports[0]) if entry.js_plain else t.file for t in tools]
    try:
        answer = probe(
            [f.as_uri() for f in files],
            read=[manifest.root],
            deno_dir=default_state_dir(manifest.id, manifest.root) / "deno",
        )
    except ProbeError as exc:
        return [{"file": str(manifest.root), "message": f"importing the tools: {exc.message}"}]
    out: list[Problem] = []
    for tool, got in zip(tools, answer.get("modules") or []):
        if not got.get("ok"):
            out.append(_import_problem(tool, got))
        elif not any(got.get("exports", {}).get(name) == "function" for name in entry.js_exports):
            out.append({"file": tool.rel_file, "message": entry.message["missing"]})
    return out


def _import_problem(tool: ToolSpec, got: dict[str, Any]) -> Problem:
    """What stops the module from loading, with its line: a remote import (N4) is named as
    such; otherwise Deno's message (a syntax error, a missing file, a throw at top level)."""
    try:
        source = tool.file.read_text("utf-8", "replace")
    except OSError:
        source = ""
    for n, text in enumerate(source.splitlines(), 1):
        m = _REMOTE.search(text)
        if m:
            return {
                "file": tool.rel_file,
                "line": n,
                "message": f"imports {m.group(1)!r}: the platform runs tools with no npm:, jsr: or "
                "remote imports (N4); vendor the code into the gem folder and import it by a relative path",
            }
    message = str(got.get("message", ""))
    found = re.search(
        re.escape(tool.file.name) + r":(\d+)(?::\d+)?", message + "\n" + str(got.get("stack", ""))
    )
    name = got.get("name") or "Error"
    text = message.split("\n    at ")[0].strip()
    return {
        "file": tool.rel_file,
        **({"line": int(found.group(1))} if found else {}),
        "message": text if re.match(r"\w*Error\b", text) else f"{name}: {text}",
    }


def _typecheck(manifest: Manifest, profile: Profile) -> list[Problem]:
    from .ctx.stores import default_state_dir
    from .runners.deno.typecheck import typecheck

    ts = [t.file for t in manifest.tools.values() if t.language == "typescript"]
    # with the manifest: the installed ctx types, and JS tools marked `// @ts-check` too
    report = typecheck(
        ts,
        deno_dir=default_state_dir(manifest.id, manifest.root) / "deno",
        manifest=manifest,
        import_map=profile.import_map,  # the platform's SDK, if any: runners never import one
    )
    return [{"file": str(manifest.root), "message": report}] if report else []
