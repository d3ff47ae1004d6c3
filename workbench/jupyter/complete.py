"""Tab completion of the magics' arguments and of `bench.call('…`, for Jupyter and IPython.

    %tool ⇥            the bench's tool names           %state ⇥       its platform's views
    %tool NAME ⇥       the tool's input field names      %state data ⇥  its collections
    %tool NAME INPUT -⇥  --pin, then the tool's cases     %%tool NAME -⇥ the same
    bench.call('⇥      tool names (any Bench variable)   %gem ⇥         open, close
    %gem open ⇥        gem folders, then other folders; `-⇥` the gem's platform's flags
    %gem open --state-dir ⇥   what that flag takes: folders for a DIR, files for a FILE

`complete(shell, text, cursor)` is the one function: None when the cursor is in none of these
places (IPython's own completion answers), else what to offer and where the replaced text
starts. The extension registers it as an IPython matcher (so `%load_ext workbench` in any
IPython kernel completes the same), and the Gem Workbench kernel answers `complete_request`
with it directly, an empty answer included: IPython's matchers would fill that with Python
keywords and magic names. Completion reads only what is already in memory (the open bench's
manifest) and the folders named (a tool's tests/calls/ folder for `--pin`); it never raises or
prints: a failure offers nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .pinflag import outside

#: how long telling gem folders from others may take; past it the rest are offered as folders
PATH_BUDGET_S = 0.15
_MAX_ENTRIES = 2000  # entries of one folder looked at: a huge folder is cut, not walked

_MAGIC = re.compile(
    r"(?P<lead>\s*(?:[A-Za-z_]\w*\s*=\s*)?)%(?P<cell>%?)(?P<name>tool|state|gem)(?P<rest>\s.*)?$"
)
_CALL = re.compile(
    r"(?<![\w.])(?P<var>[A-Za-z_]\w*)\.(?:call|form)\(\s*(?:tool\s*=\s*)?(?P<q>['\"])(?P<frag>[^'\"\\]*)$"
)
_KEY_BARE = re.compile(r"(?:^|[{,]\s*)(?P<frag>[\w-]*)$")
_KEY_QUOTED = re.compile(r"(?:^|[{,]\s*)['\"](?P<frag>[\w-]*)$")
_KEYS_GIVEN = re.compile(r"(?:^|[{,\n]\s*)['\"]?([\w-]+)['\"]?\s*:")


@dataclass
class Found:
    """What to offer at the cursor: `matches` replace the text from `start` to the cursor."""

    start: int
    matches: list[str] = field(default_factory=list)
    type: str = "workbench"


def complete(shell: Any, text: str, cursor: int | None = None) -> Found | None:
    """The workbench's completion of `text` at `cursor` (an offset; default: its end) in
    `shell`'s notebook; None when the cursor is not at a workbench argument."""
    try:
        cursor = len(text) if cursor is None else max(0, min(cursor, len(text)))
        before = text[:cursor]
        line_start = before.rfind("\n") + 1
        where = _where(before[line_start:], first=line_start == 0, cell=text)
    except Exception:  # noqa: BLE001 - completion never fails the frontend
        return None
    if where is None:
        return None
    kind, start, fragment, args = where
    if kind == "tool" and args[0] not in ("", "bench") and not _is_bench(shell, args[0]):
        return None  # `x.call('`: some other object's method
    found = Found(line_start + start, type=kind)
    try:  # a broken bench or folder: nothing to offer, and nothing printed
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            found.matches = _candidates(shell, kind, fragment, args)
    except Exception:  # noqa: BLE001
        found.matches = []
    return found


# -- where the cursor is -------------------------------------------------------------------
def _where(line: str, *, first: bool, cell: str) -> tuple[str, int, str, tuple[Any, ...]] | None:
    """(kind, start of the fragment in `line`, the fragment, what the kind needs) or None."""
    m = _MAGIC.match(line)
    if m and not (m["cell"] and (not first or m["lead"].strip())):
        rest = m["rest"] or ""
        if not rest:
            return None  # `%tool` itself: IPython completes magic names
        base = m.end("name") + len(rest) - len(rest.lstrip())
        return _magic(m["name"], bool(m["cell"]), rest.lstrip(), base)
    if not first:
        head = re.match(r"\s*%%tool\s+(\S+)(?:\s+--pin(?:=|\s+)\S*)?\s*$", cell.split("\n", 1)[0])
        if head:  # a %%tool cell's body: its top-level keys
            return _key(line, 0, head[1], cell.split("\n", 1)[1])
    c = _CALL.search(line)
    if c:
        return "tool", c.start("frag"), c["frag"], (c["var"],)
    return None


def _magic(name: str, cell: bool, rest: str, base: int) -> tuple[str, int, str, tuple[Any, ...]] | None:
    words = rest.split()
    ends_in_space = rest[-1:].isspace() if rest else True
    if name == "tool":
        if not words or (len(words) == 1 and not ends_in_space):
            return "tool", base, rest, ("",)
        tool = words[0]
        after = rest[len(tool) :].lstrip()
        pin = _pin(after, base + len(rest) - len(after), tool, cell)
        if pin is not None:
            return pin
        if cell:
            return "none", base + len(rest), "", ()  # %%tool takes only NAME and --pin on its line
        return _key(after, base + len(rest) - len(after), tool, after)
    if name == "state":
        if not words or (len(words) == 1 and not ends_in_space):
            return "view", base, rest, ()
        if words[0] == "data" and (len(words) == 1 or (len(words) == 2 and not ends_in_space)):
            frag = "" if ends_in_space else words[1]
            return "collection", base + len(rest) - len(frag), frag, ()
        return None
    # %gem
    if not words or (len(words) == 1 and not ends_in_space):
        return "subcommand", base, rest, ()
    if words[0] != "open":
        return "none", base + len(rest), "", ()
    token = _token(rest)
    done = rest[: len(rest) - len(token)].split()[1:]
    start = base + len(rest) - len(token)
    flag, eq, value = token.partition("=")
    if token.startswith("--") and eq:  # --state-dir=⇥: the flag's value, after its "="
        return "value", start + len(flag) + 1, value, (_flag_value(flag),)
    if done and (metavar := _flag_value(done[-1])) is not None:  # --state-dir ⇥: its value
        return "value", start, token, (metavar,)
    path = _gem_word(done)
    kind = "flag" if token.startswith("-") else "path"
    return kind, start, token, (path,)


def _flag_value(word: str) -> str | None:
    """The metavar of the value the `%gem open` flag `word` takes (`--state-dir`: DIR), else
    None (no flag, or one without a value)."""
    if not word.startswith("--"):
        return None
    from ..bench.options import flag_value

    return flag_value(word)


def _gem_word(done: list[str]) -> str | None:
    """The gem path among the words given: the first that is neither a flag nor a flag's value."""
    after_flag = False
    for w in done:
        if after_flag:
            after_flag = False
        elif w.startswith("-"):
            after_flag = "=" not in w and _flag_value(w) is not None
        else:
            return w.strip("'\"")
    return None


def _pin(after: str, base: int, tool: str, cell: bool) -> tuple[str, int, str, tuple[Any, ...]] | None:
    """`--pin` after a `%tool` INPUT (or a `%%tool NAME`), then the tool's cases after it;
    None where the cursor is in the INPUT (pinflag.outside)."""
    token = "" if not after or after[-1].isspace() else after.split()[-1]
    head = after[: len(after) - len(token)]
    if not outside(head, len(head)):
        return None
    if token.startswith("--pin="):
        return "case", base + len(head) + 6, token[6:], (tool,)
    if head.split()[-1:] == ["--pin"]:
        return "case", base + len(head), token, (tool,)
    if token.startswith("-") and "--pin".startswith(token) and (cell or head.strip()):
        return "pinflag", base + len(head), token, ()
    return None


def _key(before: str, base: int, tool: str, given: str) -> tuple[str, int, str, tuple[Any, ...]] | None:
    """A field name being typed in a tool's input (`title`, `{"title`, `{a: 1, ti`)."""
    m = _KEY_QUOTED.search(before) or _KEY_BARE.search(before)
    if m is None or (m.start() > 0 and "{" not in before):
        return None  # in a value (maybe a `$expression`): IPython's completion
    return "field", base + m.start("frag"), m["frag"], (tool, set(_KEYS_GIVEN.findall(given)))


def _token(rest: str) -> str:
    """The shell-like word the cursor ends (from its opening quote, if it is in one)."""
    quote = None
    start = 0
    for i, ch in enumerate(rest):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch.isspace():
            start = i + 1
    return rest[start:]


# -- what to offer ---------------------------------------------------------------------------
def _candidates(shell: Any, kind: str, fragment: str, args: tuple[Any, ...]) -> list[str]:
    if kind == "tool":
        bench = _bench(shell, args[0]) if args[0] else _current(shell)
        names = list(bench.manifest.tools) if bench is not None else []
    elif kind == "field":
        bench = _current(shell)
        spec = bench.manifest.tool(args[0]) if bench is not None else None
        props = spec.input_schema.get("properties") if spec is not None else None
        names = [n for n in props if n not in args[1]] if isinstance(props, dict) else []
    elif kind == "view":
        bench = _current(shell)
        if bench is None:
            return []
        from ..bench.views import platform_tables

        names = list(platform_tables(bench.profile))
    elif kind == "collection":
        bench = _current(shell)
        names = list(bench.manifest.collections) if bench is not None else []
    elif kind == "pinflag":
        names = ["--pin"]
    elif kind == "case":  # the cases the tool has: pinning one again replaces it
        bench = _current(shell)
        from ..gem.names import case_folder

        folder = bench.manifest.root / "tests" / "calls" / case_folder(args[0]) if bench is not None else None
        names = _cases(folder) if folder is not None else []
    elif kind == "subcommand":
        names = ["open", "close"]
    elif kind == "flag":
        from ..bench.options import gem_flags

        names = gem_flags(os.path.expanduser(args[0]) if args[0] else None)
    elif kind == "path":
        return gem_paths(fragment)
    elif kind == "value":
        return value_paths(fragment, args[0])
    else:
        return []
    return sorted(n for n in names if n.startswith(fragment))


def _cases(folder: Path) -> list[str]:
    """The names of the cases in a tool's folder of tests/calls (a huge folder is cut)."""
    out = []
    with os.scandir(folder) as entries:
        for n, entry in enumerate(entries):
            if n >= _MAX_ENTRIES:
                break
            if entry.name.endswith(".json") and not entry.name.startswith("."):
                out.append(entry.name[: -len(".json")])
    return out


def _bench_class() -> Any:
    module = sys.modules.get("workbench.bench.bench")  # not imported yet: no bench exists
    return getattr(module, "Bench", None)


def _is_bench(shell: Any, var: str) -> bool:
    cls = _bench_class()
    try:
        return cls is not None and isinstance(shell.user_ns.get(var), cls)
    except Exception:  # noqa: BLE001 - an odd object's __class__
        return False


def _bench(shell: Any, var: str) -> Any:
    """The open Bench in the notebook variable `var`, else None."""
    cls = _bench_class()
    value = shell.user_ns.get(var) if cls is not None else None
    return value if cls is not None and isinstance(value, cls) and not value.closed else None


def _current(shell: Any) -> Any:
    """The bench `%tool` and `%state` act on (WorkbenchMagics.bench), or None."""
    cls = _bench_class()
    if cls is None:
        return None
    bench = shell.user_ns.get("bench")
    if not isinstance(bench, cls):
        magics = shell.magics_manager.registry.get("WorkbenchMagics")
        bench = getattr(magics, "opened", None)
    return bench if bench is not None and not bench.closed else None


def gem_paths(token: str) -> list[str]:
    """The folders `token` (a path being typed, maybe quoted) completes to: gem folders
    first, as `workbench.open` detects them, then the other folders with a `/` (the way to a
    gem further down); never files."""
    quote, head, entries = _typed_entries(token)
    deadline = time.monotonic() + PATH_BUDGET_S
    gems, others = [], []
    for entry in entries:
        if not entry.is_dir():
            continue
        if time.monotonic() <= deadline and is_gem(entry.path):  # out of time: unchecked
            gems.append(head + entry.name)
        else:
            others.append(head + entry.name + "/")
    return [_quoted(p, quote, done=True) for p in sorted(gems)] + [
        _quoted(p, quote, done=False) for p in sorted(others)
    ]


def value_paths(token: str, metavar: str | None) -> list[str]:
    """What a flag's value `token` completes to, by its metavar: folders for a DIR, files and
    folders for a FILE or PATH, and the metavar's own words (`real|FILE`: real); nothing for a
    number, a time or a NAME=VALUE (no file is a good guess)."""
    words = (metavar or "").split("|")
    literal = [w for w in words if w.islower() and w.startswith(token)]
    kinds = {w for w in words if w in ("DIR", "FILE", "PATH")}
    if not kinds:
        return literal
    quote, head, entries = _typed_entries(token)
    folders, files = [], []
    for entry in entries:
        if entry.is_dir():
            folders.append(head + entry.name + "/")
        elif kinds != {"DIR"}:
            files.append(head + entry.name)
    return (
        literal
        + [_quoted(p, quote, done=False) for p in sorted(folders)]
        + [_quoted(p, quote, done=True) for p in sorted(files)]
    )


def _typed_entries(token: str) -> tuple[str, str, list[os.DirEntry[str]]]:
    """For a path being typed (maybe quoted): its quote, its folder part as typed, and the
    entries of that folder its last part starts (at most _MAX_ENTRIES read; dot-entries only
    when typed)."""
    quote = token[:1] if token[:1] in "'\"" else ""
    typed = token[len(quote) :]
    head, base = typed[: typed.rfind("/") + 1], typed[typed.rfind("/") + 1 :]
    found = []
    with os.scandir(os.path.expanduser(head) if head else ".") as entries:
        for n, entry in enumerate(entries):
            if n >= _MAX_ENTRIES:
                break
            name = entry.name
            if name.startswith(base) and (base.startswith(".") or not name.startswith(".")):
                found.append(entry)
    return quote, head, found


def _quoted(path: str, quote: str, *, done: bool) -> str:
    if not quote and not re.search(r"[\s'\"]", path):
        return path
    q = quote or ('"' if "'" in path or '"' not in path else "'")
    return q + path + (q if done else "")


def is_gem(folder: str) -> bool:
    """A gem folder, as `workbench.open` detects one: a manifest.json, or a folder a loaded
    platform's `detects` claims (Ekanos: integration.ts); no plugin is loaded for this."""
    if os.path.lexists(os.path.join(folder, "manifest.json")):
        return True
    from ..platforms import profiles

    root = Path(folder)
    return any(p.detects is not None and p.detects(root) for p in profiles(loaded_only=True))


# -- IPython ---------------------------------------------------------------------------------
def matcher(shell: Any) -> Any:
    """An IPython matcher (API v2) offering `complete`'s matches, and only those where it
    has some."""
    from IPython.core.completer import SimpleCompletion, context_matcher

    @context_matcher(identifier="workbench")
    def workbench_matcher(context: Any) -> dict[str, Any]:
        lines = context.full_text.split("\n")
        offset = sum(len(x) + 1 for x in lines[: context.cursor_line]) + context.cursor_position
        found = complete(shell, context.full_text, offset)
        if found is None or not found.matches:
            return {"completions": [], "suppress": False}
        return {
            "completions": [SimpleCompletion(m, type=found.type) for m in found.matches],
            "matched_fragment": context.full_text[found.start : offset],
            "suppress": True,
            "ordered": True,
        }

    return workbench_matcher


def install(shell: Any) -> None:
    """Add the matcher to `shell`'s completer (once)."""
    completer = getattr(shell, "Completer", None)
    if completer is None or any(
        getattr(m, "matcher_identifier", None) == "workbench" for m in completer.custom_matchers
    ):
        return
    completer.custom_matchers.append(matcher(shell))
