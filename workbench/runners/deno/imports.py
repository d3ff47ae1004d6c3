"""The local files a module's static import graph reaches, checked against the folders it may
read, before the module runs (N1).

Deno loads the modules of the graph it builds before running (static imports, and dynamic
`import()` of a literal string, of every kind: code, JSON, `with { type: "text" }`) without
checking `--allow-read`; only modules it loads later (a computed `import()`, a Worker and its own
imports) are checked. So `deno info --json` lists that graph first, with the same import map,
and every `file:` specifier in it must resolve (symlinks followed) inside an allowed root.
Other schemes are left to Deno's own flags (`--no-remote`, `--no-npm`; `data:` reads nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..._deno import deno_bin, minimal_env
from ..._errors import WorkbenchError
from ..python import CappedLog
from .pump import Bytes, capped, pump

#: Bytes of `deno info --json` read at most (a graph of thousands of modules fits many times).
GRAPH_LIMIT = 16 * 1024 * 1024


def refused_import(
    file: Path, roots: list[Path], *, import_map: Path, deno_dir: Path, deadline: float | None
) -> WorkbenchError | None:
    """E_SANDBOX naming `file`, the specifier as written and where it leads, for the first
    local module of `file`'s static graph outside `roots` (or a graph that cannot be listed);
    "timeout" as an E_TIMEOUT; None when every local module is inside."""
    real = [r.resolve() for r in roots]
    graph = _graph(file, import_map, deno_dir, deadline)
    if isinstance(graph, WorkbenchError):
        return graph
    for importer, written, url in _specifiers(graph):
        if urlsplit(url).scheme.lower() != "file":
            continue
        path = _path(url)
        if path is None or not any(path.is_relative_to(r) for r in real):
            return WorkbenchError(
                "E_SANDBOX",
                f"{file.name} may not import {written!r} (from {importer}): it leads to "
                f"{path or url}, outside the integration folder and the SDK. A TS test may read "
                "only those (N1)",
                capability="read",
                file=str(file),
                specifier=written,
                target=str(path or url),
            )
    return None


def _graph(
    file: Path, import_map: Path, deno_dir: Path, deadline: float | None
) -> dict[str, Any] | WorkbenchError:
    cmd = [
        deno_bin(),
        "info",
        "--json",
        "--no-config",
        "--no-lock",
        "--no-npm",
        "--no-remote",
        f"--import-map={import_map}",
        str(file),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=file.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=minimal_env(deno_dir),
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Bytes(GRAPH_LIMIT), CappedLog(4096)
    try:
        status = pump(
            proc,
            proc.stdout.fileno(),
            {proc.stdout.fileno(): out, proc.stderr.fileno(): capped(err)},
            deadline,
        )
    finally:
        proc.stdout.close()
        proc.stderr.close()
    if status == "timeout":
        return WorkbenchError("E_TIMEOUT", f"listing the imports of {file.name} ran over the file's timeout")
    if status == "full":
        return WorkbenchError(
            "E_TOO_LARGE", f"the import graph of {file.name} is over {GRAPH_LIMIT} bytes", limit=GRAPH_LIMIT
        )
    try:
        graph = json.loads(out.data)
    except ValueError:
        graph = None
    if proc.returncode != 0 or not isinstance(graph, dict):
        head, tail, _ = err.kept()
        why = (head + tail).decode("utf-8", "replace").strip()
        return WorkbenchError(
            "E_SANDBOX", f"the imports of {file.name} could not be listed: {why}", file=str(file)
        )
    return graph


def _specifiers(graph: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(importer, specifier as written, resolved URL) for every URL the graph names: each
    import (code and types, a module's types dependency) first, as it names the importer and
    the specifier as written; then each module's own URL and each redirect."""
    modules = [m for m in graph.get("modules") or [] if isinstance(m, dict)]
    for module in modules:
        importer = str(module.get("local") or module.get("specifier", ""))
        deps = [d for d in module.get("dependencies") or [] if isinstance(d, dict)]
        types = module.get("typesDependency")
        if isinstance(types, dict):
            deps.append({"specifier": types.get("specifier"), "code": types.get("dependency")})
        for dep in deps:
            for kind in ("code", "type"):
                target = dep.get(kind)
                if isinstance(target, dict):
                    yield importer, str(dep.get("specifier")), str(target.get("specifier", ""))
    for module in modules:
        own = str(module.get("specifier", ""))
        yield own, own, own
    for source, target in (graph.get("redirects") or {}).items():
        yield str(source), str(source), str(target)


def _path(url: str) -> Path | None:
    """The real path of a `file:` URL, or None when it names another host's file."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        return None
    return Path(os.path.realpath(unquote(parts.path)))
