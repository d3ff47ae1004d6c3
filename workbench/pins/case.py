"""Pinned calls (issue 29): a call saved as a regression case, `tests/calls/<tool>/<name>.json`.

A case is one readable JSON file: the tool, its input, the call's options, its clock and seed,
the state it found (what it read, listed or changed, as it was before: from the copy the ctx
layer makes at its first file or storage access, ctx/before.py), every ctx call in order (its
effects: HTTP exchanges, mail, ctx.tools results), the HTTP answers a replay serves back, the
result and the state it changed. Secrets never reach it: the text is masked with every secret
the bench has seen, in every form the trace masks them (ctx/masking.py). The replay is
testing/pins.py's.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from .._version import __version__
from ..ctx.statejson import content_json, part_changes
from ..gem.names import case_folder

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..ctx.before import Before
    from ..platforms import Profile

__all__ = ["CASE_FORMAT", "build_case", "case_path", "case_text", "pin", "state_before", "write_case"]

CASE_FORMAT = 1
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# names Windows keeps for devices, whatever the extension: a checkout there could not hold them
_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?", re.IGNORECASE)


def case_path(root: Path, tool: str, name: str, *, under: str | None = None) -> Path:
    """Where case `name` of `tool` lives in the gem at `root` (`under`: a folder of tests/calls
    for cases written by the workbench, "doctor"); UsageError for a name that is not a plain
    file name (it becomes one). Any tool name the manifest took has a folder (case_folder)."""
    if not isinstance(tool, str):
        raise UsageError(f"pin tool {tool!r}: a tool name is a string")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name or _DEVICE.fullmatch(name):
        raise UsageError(
            f"pin name {name!r}: use letters, digits, '.', '_' and '-' (up to 100, no '..', "
            "not a device name such as 'con')"
        )
    calls = root / "tests" / "calls"
    return (calls / under if under else calls) / case_folder(tool) / f"{name}.json"


# -- the state a call found ------------------------------------------------------------------
def _strings(value: Any, out: set[str], budget: list[int]) -> None:
    """Every string in `value` (arguments and results of ctx calls), boundedly."""
    stack = [value]
    while stack and budget[0] > 0:
        v = stack.pop()
        budget[0] -= 1
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


class _Said:
    """The strings (paths, keys, …) a call's ctx calls named, arguments and results, by the
    capability (impl) called: the trace is read once, each capability's strings only when a
    part asks for them (a part keeping its copy whole never does)."""

    def __init__(self, trace: list[dict[str, Any]], profile: Profile) -> None:
        self._trace, self._profile = trace, profile
        self._rows: dict[str, list[dict[str, Any]]] | None = None
        self._found: dict[str, set[str]] = {}

    def of(self, impl: str) -> set[str]:
        found = self._found.get(impl)
        if found is not None:
            return found
        if self._rows is None:
            from ..ctx.before import part_of

            by_method: dict[str, list[dict[str, Any]]] = {}
            for row in self._trace:
                by_method.setdefault(str(row.get("method", "")), []).append(row)
            self._rows = {}
            for method, rows in by_method.items():
                self._rows.setdefault(part_of(self._profile, method), []).extend(rows)
        found = self._found[impl] = set()
        for row in self._rows.get(impl, ()):
            _strings((row.get("params"), row.get("result")), found, [10_000])
        return found


class _Named(Mapping[str, set[str]]):
    """{impl: the strings its calls named} for the capabilities holding one part."""

    def __init__(self, said: _Said, impls: list[str]) -> None:
        self._said, self._impls = said, impls

    def __getitem__(self, impl: str) -> set[str]:
        if impl not in self._impls:
            raise KeyError(impl)
        return self._said.of(impl)

    def __iter__(self) -> Iterator[str]:
        return iter(self._impls)

    def __len__(self) -> int:
        return len(self._impls)


def state_before(
    before: Before, trace: list[dict[str, Any]], changed: dict[str, list[dict[str, Any]]], profile: Profile
) -> dict[str, Any]:
    """The part of `before` the call read, listed or changed, as JSON, part by part as each
    says (`StatePart.before_json`: e.g. the files and kv entries it named or changed, whole
    collections it used, whole SQL tables its statements name; default: the part's whole copy).
    `changed`: each part's change entries (statejson.part_changes)."""
    from ..ctx.before import held_by

    held = held_by(profile)
    said = _Said(trace, profile)
    out: dict[str, Any] = {}
    for part, _, copy in before.ordered():
        if part.before_json is None:
            out[part.name] = copy
            continue
        impls = [impl for impl, parts in held.items() if any(p.name == part.name for p in parts)]
        named = _Named(said, impls)
        value = part.before_json(copy, named, changed.get(part.name, []))
        if value is not None:
            out[part.name] = value
    return out


# -- the case --------------------------------------------------------------------------------
def _effects(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in trace:
        if "method" not in row or row.get("method") is None:
            continue
        params: Any = row.get("params") or ((), {})
        # (args, kwargs); a list pair once masked (a trace of a bench with secrets: ctx/_session.py)
        pair = isinstance(params, (tuple, list)) and len(params) == 2 and isinstance(params[1], dict)
        args, kwargs = params if pair else (params, {})
        entry: dict[str, Any] = {
            "method": row["method"],
            "args": list(args) if isinstance(args, (list, tuple)) else args,
        }
        if kwargs:
            entry["kwargs"] = kwargs
        entry["ok"] = bool(row.get("ok"))
        if row.get("error"):
            entry["error"] = row["error"]
        if row.get("result") is not None:
            entry["result"] = row["result"]
        out.append(entry)
    return out


def _exchanges(profile: Profile, effects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The HTTP answers the call got (of its `effects`), as a replay serves them back
    (request: method, URL, body; response: what the tool saw after redirects)."""
    from ..ctx.standins import http_exchange

    out = []
    for e in effects:
        if not http_exchange(profile, e["method"]) or not e["ok"] or not isinstance(e.get("result"), dict):
            continue
        args = e["args"] if isinstance(e["args"], list) else []
        url = args[0] if args else None
        init = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        if isinstance(url, dict):  # a Request-like object
            init, url = url, url.get("url")
        r = e["result"]
        body = r.get("body")
        try:
            raw = base64.b64decode(body) if isinstance(body, str) else b""
        except ValueError:
            raw = b""
        request = {"method": str(init.get("method") or "GET").upper(), "url": url}
        if isinstance(init.get("body"), str):
            request["body"] = init["body"]
        out.append(
            {
                "request": request,
                "response": {
                    "status": r.get("status"),
                    "statusText": r.get("statusText", ""),
                    "headers": r.get("headers", []),
                    **content_json(raw),
                },
            }
        )
    return out


def _error(err: WorkbenchError | None) -> dict[str, Any] | None:
    return None if err is None else {"code": err.code, "message": err.message}


def _kept(bench: Bench, res: CallResult) -> Before:
    """The state copy of `res`; UsageError when the bench no longer has it."""
    from ..ctx.before import Before

    if res.crash is not None:
        raise UsageError("a call made with crash= is two runs: pin the call made without it")
    if res.parent is not None:
        raise UsageError("pin the top-level call: this one ran inside it through ctx.tools")
    if res.error is not None and res.error.code == "E_INTERRUPTED":  # a replay would not stop there
        raise UsageError(f"call {res.call_id} was interrupted (Ctrl-C): call it again and pin that call")
    from .pinning import pinning_of

    pinning = pinning_of(bench)
    kept = pinning.copy_of(res.call_id) if pinning is not None else None
    if kept is not None:
        return kept
    latest = bench.results[len(bench.results) - 1] if len(bench.results) else None
    if bench.pins and latest is res and not res.trace_rows and res.error is not None:
        return Before(bench.limits.pin_state_bytes)  # refused before it ran (E_SCHEMA): no state
    why = (
        "this bench was opened with pins=False"
        if not bench.pins
        else "only the bench's latest call can be pinned: pin it right after it ran"
    )
    raise UsageError(f"cannot pin call {res.call_id}: {why}")


def _credentials(bench: Bench, effects: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the user's credential of each connection the call named may go (hosts, paths;
    never its value): a replay gives a stand-in credential the same reach (N10, SEC4)."""
    from ..ctx.standins import credential_reach, http_exchange

    out: dict[str, Any] = {}
    for e in effects:
        init = e["args"][1] if isinstance(e["args"], list) and len(e["args"]) > 1 else None
        name = init.get("connection") if isinstance(init, dict) else None
        if not http_exchange(bench.profile, e["method"]) or not isinstance(name, str) or name in out:
            continue
        reach = credential_reach(bench.providers, name)
        if reach is not None:
            out[name] = reach
    return out


def _secrets(bench: Bench, effects: list[dict[str, Any]]) -> list[str]:
    """The names of the secrets the call read that were set (K6): a replay sets stand-ins."""
    from ..ctx.standins import secrets_set

    names = {
        str(e["args"][0])
        for e in effects
        if e["method"] in bench.profile.secret_methods and isinstance(e["args"], list) and e["args"]
    }
    return secrets_set(bench.providers, names)


def build_case(bench: Bench, res: CallResult) -> dict[str, Any]:
    """The case of `res`, the bench's latest call (UsageError otherwise), masked of secrets."""
    before = _kept(bench, res)
    if before.over:
        kind, why = next(iter(before.over.items()))
        raise WorkbenchError(
            "E_TOO_LARGE", f"cannot pin call {res.call_id}: {why}", limit=before.limit, what=kind
        )
    recording = before.recording
    if recording is not None and recording.over:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"cannot pin call {res.call_id}: it made more than {recording.limit:,} calls a replay serves back",
            limit=recording.limit,
        )
    by_part = part_changes(before)
    changed = [entry for rows in by_part.values() for entry in rows]
    trace = res.trace_rows
    effects = _effects(trace)
    options = dict(res.replay.get("options") or {})
    case: dict[str, Any] = {
        "case": CASE_FORMAT,
        "workbench": __version__,
        "platform": bench.profile.name,
        "gem": bench.manifest.id,
        "tool": res.tool,
        "input": res.input,
        "options": {
            **{k: v for k, v in options.items() if v is not None},
            "providers": bench.provider_kinds,
        },
        "call": {
            "call_id": res.call_id,
            "idempotency_key": res.idempotency_key,
            "seed": res.replay.get("seed"),
            "ids": res.replay.get("ids"),
            "clock_ms": res.replay.get("clock_ms"),
            "frozen": res.replay.get("frozen", False),
            # the sandbox's reads of a clock that ran, served again by the replay
            **({"ticks": res.replay["ticks"]} if res.replay.get("ticks") else {}),
            # the times the ctx layer read from the bench's clock that ran, served again
            **({"times": res.replay["times"]} if res.replay.get("times") else {}),
            "started": res.started,
            "duration_ms": round(res.duration_ms, 3),
        },
        "credentials": _credentials(bench, effects),
        "secrets": _secrets(bench, effects),
        "before": state_before(before, trace, by_part, bench.profile),
        "effects": effects,
        "http": _exchanges(bench.profile, effects),
        "served": recording.entries if recording is not None else [],
        "result": {
            "ok": res.error is None,
            "value": res.value,
            "error": _error(res.error),
            **({"expected_failure": True} if res.expected_failure else {}),
        },
        "changes": changed,
    }
    return case


def case_text(bench: Bench, case: dict[str, Any]) -> str:
    """The case as the file holds it: indented, keys in order, every secret the bench has seen
    masked in every form (plain, JSON-escaped, URL- and base64-encoded)."""
    text = json.dumps(case, indent=1, ensure_ascii=False, default=json_default) + "\n"
    from ..ctx.standins import mask_of

    mask = mask_of(bench.providers)
    if mask is not None:
        # each string masked as it decodes (a secret escaped deeper than the mask's forms, or
        # with \u escapes, shows once its JSON is read), JSON inside strings included
        text = json.dumps(scrub_json(mask, json.loads(text), 0), indent=1, ensure_ascii=False) + "\n"
        if mask(text) != text:  # a secret across the text's own quotes and commas
            line = next(
                n for n, (a, b) in enumerate(zip(text.splitlines(), mask(text).splitlines()), 1) if a != b
            )
            raise WorkbenchError(
                "E_SECRET",
                f"cannot pin call: line {line} of its case would hold a secret in a form the mask "
                "cannot hide in place; nothing was written",
                line=line,
            )
    limit = bench.limits.case_bytes
    if len(text.encode("utf-8")) > limit:
        raise WorkbenchError("E_TOO_LARGE", f"the case is over case_bytes ({limit:,} bytes)", limit=limit)
    return text


_SCRUB_DEPTH = 8  # JSON texts inside strings, inside strings, … read to look for a secret


def scrub_json(mask: Any, v: Any, depth: int) -> Any:
    """`v` with each string masked as it decodes, and each string that is a JSON text read and
    masked in turn (written again, compact, only when it held a secret)."""
    if isinstance(v, dict):
        return {scrub_json(mask, k, depth): scrub_json(mask, x, depth) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub_json(mask, x, depth) for x in v]
    if not isinstance(v, str):
        return v
    masked = mask(v)
    if masked != v or depth >= _SCRUB_DEPTH or v.lstrip()[:1] not in ("{", "[", '"'):
        return masked
    try:
        inner = json.loads(v)
    except (ValueError, RecursionError):
        return v
    again = scrub_json(mask, inner, depth + 1)
    return v if again == inner else json.dumps(again, ensure_ascii=False)


def json_default(v: Any) -> Any:
    """What json.dumps writes for a value JSON has no type for (a case's, a bundle's): bytes
    as {"base64": …}, a set sorted, anything else as its text."""
    if isinstance(v, bytes):
        return {"base64": base64.b64encode(v).decode("ascii")}
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=str)
    return str(v)


def _no_link(path: Path) -> None:
    for p in (path, *path.parents):
        if p.is_symlink():
            raise WorkbenchError("E_PATH", f"{p} is a link: a case is not written through one", path=str(p))
        if p.name == "tests":
            break


# what differs between two runs of one behaviour: the workbench's version, and the call's own
# id, key, seeds, clock, start and duration (the case kept records a run of the same behaviour)
_PER_RUN = ("workbench", "call")


def _same_behaviour(path: Path, text: str) -> bool:
    """Whether the case at `path` holds what `text` does but for _PER_RUN: then it is kept
    byte for byte, so pinning an unchanged call again leaves nothing to commit."""
    try:
        info = path.lstat()
        if not path.is_file() or path.is_symlink() or info.st_size > 2 * len(text) + 4096:
            return False
        old = json.loads(path.read_text(encoding="utf-8"))
        new = json.loads(text)
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    # as texts, not as values: 1 and 1.0, or true and 1, are a difference in a case
    return _rest(old) == _rest(new)


def _rest(case: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in case.items() if k not in _PER_RUN}, ensure_ascii=False)


def write_case(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically (a temp file in its folder, then a rename), never
    through a link (checked before its folders are made: mkdir follows one); a case there of
    the same behaviour is left as it is (_same_behaviour)."""
    _no_link(path)
    if _same_behaviour(path, text):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _no_link(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise WorkbenchError(
            "E_PATH", f"{path}: cannot write the case ({exc.strerror})", path=str(path)
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WorkbenchError(
            "E_PATH", f"{path}: cannot write the case ({exc.strerror})", path=str(path)
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: Set by a test run (the pytest plugin, for each notebook it runs and each `bench` fixture):
#: the folder the run's pins go to, so that a run never rewrites the cases it replays; and
#: the folders under test (os.pathsep between them), whose gems the run keeps its pins out of.
RUN_PINS = "GEM_WORKBENCH_RUN_PINS"
RUN_TREE = "GEM_WORKBENCH_RUN_TREE"


def pin_root(bench: Bench) -> Path:
    """The folder whose tests/calls/ a pin of `bench` goes to: the gem's, or during a test run
    (RUN_PINS set) for a gem under its tree, `<run folder>/<gem folder name>`, laid out as the
    gem is (a scratch copy the run made elsewhere, as tutorial 07's, keeps its own pins)."""
    root = bench.manifest.root
    run = os.environ.get(RUN_PINS, "").strip()
    if not run:
        return root
    tree = [Path(t) for t in os.environ.get(RUN_TREE, "").split(os.pathsep) if t.strip()]
    where = root.resolve()
    if tree and not any(where == t or where.is_relative_to(t) for t in tree):
        return root
    return Path(run) / root.name


def pin(bench: Bench, res: CallResult, name: str, *, folder: Path | None = None) -> Path:
    """Save `res` (the bench's latest call) as `tests/calls/<tool>/<name>.json` of the gem (or
    under `folder`; during a test run, under its run folder: pin_root); returns the path.
    Writing it again replaces it."""
    path = case_path(folder if folder is not None else pin_root(bench), res.tool, name)
    with bench.core.lock:
        text = case_text(bench, build_case(bench, res))
    return write_case(path, text)
