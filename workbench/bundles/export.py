"""Repro bundles (issue 29): `bench.export("case.gemrepro")` writes one file that a colleague
opens with `workbench.open("case.gemrepro")` and reruns with `gem-workbench replay`.

A bundle is a zip of:

    bundle.json      format, workbench version, platform, gem id, clock, seed, the bench's
                     setup at export, the calls (each with the outside answers its replay
                     serves back: ctx calls, HTTP exchanges, clock reads), and the sha256 and
                     size of every other entry
    state.json       the bench's whole state at export (ctx/statejson.dump_state)
    start.json       the state and setup the first exported call found (a bench's first call
                     keeps them: ctx/before.keep_start); absent when the bench lost them
    gem/<path>       the gem's definition (gem_files: no dot-entries outside fixtures/, no
                     __pycache__, node_modules, tests/calls or bundles; no links)
    cases/<n>.json   the pinned case of a call whose state copy the bench still has (its latest)

Every entry is masked with every secret the bench has seen before it is written, so a bundle
can be sent. Reading one back (someone else's file) is bundles/read.py's.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from .._version import __version__

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..platforms import Limits

__all__ = ["BUNDLE_FORMAT", "SUFFIX", "export", "gem_files", "is_bundle", "scrubbed", "unwritable"]

BUNDLE_FORMAT = 2
FORMATS = (1, 2)  # what a reader opens: a format-1 bundle replays as it did
SUFFIX = ".gemrepro"
META = "bundle.json"
STATE = "state.json"
START = "start.json"
_SKIPPED_DIRS = {"__pycache__", "node_modules"}
_STAMP = (1980, 1, 1, 0, 0, 0)  # every entry's date: two exports of one bench are the same bytes
RATIO_SLACK = 1024 * 1024  # an entry's first MiB is not held to Limits.bundle_ratio
# a JSON string that is itself a JSON text (an object, an array, a string), where a secret can
# hide deeper than the mask's own escapes; a text without one is masked in place (the pins'
# per-string scrub cost 3.5 times the text mask on a 9 MB fixture of 400,000 strings)
# (leading white space, escaped or not, as str.lstrip skips it; a \u escape may be the opener)
_NESTED = re.compile(r'"(?:\s|\\[nrtfb]|\\u[0-9a-fA-F]{4})*(?:[\[{]|\\"|\\u[0-9a-fA-F]{4})')


def is_bundle(path: Any) -> bool:
    """Whether `path` names a bundle file (by its suffix: what `workbench.open` dispatches on)."""
    return isinstance(path, (str, os.PathLike)) and str(os.fspath(path)).endswith(SUFFIX)


# -- the gem's files ------------------------------------------------------------------------
def _wanted(rel: str) -> bool:
    parts = rel.split("/")
    if any(p in _SKIPPED_DIRS for p in parts) or rel.endswith(SUFFIX) or parts[:2] == ["tests", "calls"]:
        return False
    # a dot-entry of the conversation's fixtures is the tool's to find (F-rules); elsewhere it
    # is an editor's, git's or the workbench's own (.gem-workbench/): not the gem
    return parts[0] == "fixtures" or not any(p.startswith(".") for p in parts)


def gem_files(root: Path, limits: Limits) -> Iterator[tuple[str, bytes]]:
    """(gem-relative path, bytes) of each regular file of the gem's definition, links not
    followed; E_TOO_LARGE past Limits.bundle_bytes or bundle_entries."""
    total = count = 0
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        here = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if here == "." else here + "/"
        dirs[:] = sorted(d for d in dirs if _wanted(prefix + d))
        for name in sorted(files):
            rel = prefix + name
            if not _wanted(rel):
                continue
            data = _read_regular(Path(dirpath) / name, limits.bundle_bytes - total)
            if data is None:  # a link, a FIFO, gone meanwhile: not part of the definition
                continue
            total, count = total + len(data), count + 1
            if count > limits.bundle_entries:
                raise WorkbenchError(
                    "E_TOO_LARGE",
                    f"the gem has more than {limits.bundle_entries:,} files (Limits.bundle_entries)",
                    limit=limits.bundle_entries,
                )
            yield rel, data


def _read_regular(path: Path, budget: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max(budget, 0) + 1)
    finally:
        os.close(fd)
    if len(data) > budget:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"the gem's files are over {budget:,} bytes with {path.name} (Limits.bundle_bytes)",
            limit=budget,
            path=str(path),
        )
    return data


# -- the calls -----------------------------------------------------------------------------
def _chosen(bench: Bench, calls: Iterable[Any] | None) -> list[CallResult]:
    """The calls to export: every top-level call the bench still keeps (None), or those given
    as CallResults of this bench or indexes of bench.results, in the bench's order."""
    kept = list(bench.results)
    if calls is None:
        return [r for r in kept if r.parent is None]
    out: list[CallResult] = []
    for c in calls:
        if isinstance(c, int) and not isinstance(c, bool):
            if not -len(kept) <= c < len(kept):
                raise UsageError(f"calls: {c} is not an index of bench.results ({len(kept)} calls)")
            c = kept[c]
        if not any(c is r for r in kept):
            raise UsageError(
                f"calls: {c!r:.80} is not a call this bench keeps: give CallResults of bench.results or indexes"
            )
        if c.parent is not None:
            raise UsageError(f"calls: call {c.call_id} ran inside call {c.parent}: export the top-level call")
        if not any(c is r for r in out):
            out.append(c)
    order = {id(r): i for i, r in enumerate(kept)}
    return sorted(out, key=lambda r: order[id(r)])


def _outside(bench: Bench, res: CallResult) -> dict[str, Any]:
    """What the call read from or sent outside the bench's state, as its replay serves it
    back: the replayed ctx calls (mailbox pages, built-ins' answers), its HTTP exchanges, the
    secrets it read and its credentials' reach (stand-ins on the replay), its clock reads."""
    from ..pins.case import _credentials, _effects, _exchanges, _secrets

    rp = res.replay
    recording = rp.get("served")
    if recording is None:
        return {"served": None, "why": "the bench was opened with pins=False: its calls kept no answers"}
    if recording.over:
        return {"served": None, "why": f"it made more than {recording.limit:,} calls a replay serves back"}
    effects = _effects(res.trace_rows)
    return {
        "served": recording.entries,
        "http": _exchanges(bench.profile, effects),
        "secrets": _secrets(bench, effects),
        "credentials": _credentials(bench, effects),
    }


def _record(bench: Bench, res: CallResult) -> dict[str, Any]:
    """What a replay needs to call it again: tool, input, per-call options, ids, clock, the
    answers it got from outside, result."""
    rp = res.replay
    err = res.error
    return {
        "tool": res.tool,
        "input": res.input,
        "options": {k: v for k, v in (rp.get("options") or {}).items() if v is not None},
        "call": {
            "call_id": res.call_id,
            "idempotency_key": res.idempotency_key,
            "seed": rp.get("seed"),
            "ids": rp.get("ids"),
            "clock_ms": rp.get("clock_ms"),
            "frozen": rp.get("frozen", False),
            "started": res.started,
            "duration_ms": round(res.duration_ms, 3),
            **({"ticks": rp["ticks"]} if rp.get("ticks") else {}),
            **({"times": rp["times"]} if rp.get("times") else {}),
            **({"crash": True} if res.crash is not None else {}),
            # the crashed run of call(crash=N): its replay crashes at the same ctx call
            **({"crash_after": _crashed_after(err)} if _crashed_after(err) is not None else {}),
        },
        "outside": _outside(bench, res),
        "result": {
            "ok": err is None,
            "value": res.value,
            "error": None if err is None else {"code": err.code, "message": err.message},
        },
    }


def _crashed_after(err: WorkbenchError | None) -> int | None:
    """After how many ctx calls a simulated crash (N7) stopped the run, or None."""
    if err is None or err.details.get("capability") != "crash":
        return None
    after = err.details.get("crashed_after")
    return after if type(after) is int and after >= 0 else None


def _case_of(bench: Bench, res: CallResult) -> tuple[str | None, str | None]:
    """(the pinned case's text, None) of the bench's latest call, or (None, why not)."""
    from ..pins.case import build_case, case_text

    latest = bench.results[len(bench.results) - 1] if len(bench.results) else None
    if res is not latest:
        return None, "the bench keeps the state copy of its latest call only: rerun from the gem's fixtures"
    try:
        return case_text(bench, build_case(bench, res)), None
    except WorkbenchError as exc:  # pins=False, crash=, over pin_state_bytes: said, not fatal
        return None, exc.message


def _start(bench: Bench, chosen: list[CallResult]) -> tuple[dict[str, Any] | None, str]:
    """({"state", "setup"} the first of `chosen` found, or None, why not): what a replay puts
    on its fresh bench before the first call. Without calls, the bench's as they are now."""
    from ..ctx.before import start_of
    from ..ctx.state import dump

    if not chosen:
        return {"state": dump(bench), "setup": dump(bench, roles=("setup",))}, ""
    kept = start_of(bench)
    if kept is None:
        return None, "the bench kept no state of its first call (opened with pins=False)"
    first, found, why = kept
    if found is None:
        return None, why
    if first != chosen[0].call_id:
        return None, (
            f"the bench keeps the state its first call ({first}) found; the first exported call is "
            f"{chosen[0].call_id}: export from the bench's first call"
        )
    top = [r for r in bench.results if r.parent is None]
    for mine, theirs in zip(chosen, top):  # a run of calls: a replay from the start makes them all
        if mine is not theirs:
            return None, (
                f"the exported calls skip call {theirs.call_id}: a replay from the start would not "
                "make it; export a run of calls from the bench's first"
            )
    return found, ""


# -- writing -------------------------------------------------------------------------------
def _masker(bench: Bench) -> Any:
    """bytes -> bytes with every secret the bench has seen masked by the one mask (the http
    state's, ctx/masking.py), as a pinned case's strings are; identity when it has none."""
    from ..ctx.standins import mask_of

    masked_by = mask_of(bench.providers)
    if masked_by is None:
        return lambda data: data
    from ..pins.case import scrub_json

    def mask(data: bytes) -> bytes:
        # UTF-8 text as a case's string (JSON inside it read and masked too); other bytes
        # through latin-1 (lossless), so an ASCII secret in a binary file is masked too
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return masked_by(data.decode("latin-1")).encode("latin-1", "replace")
        masked = masked_by(text)
        if masked != text:
            _still_json(text, masked)
        if not _NESTED.search(masked):  # no JSON text inside a string: masked in place
            return masked.encode("utf-8")
        try:
            value = json.loads(masked)
        except (ValueError, RecursionError):
            return masked.encode("utf-8")
        again = scrub_json(masked_by, value, 0)
        # rewritten (compact) only when a secret hid deeper than the mask's own forms
        return (masked if again == value else json.dumps(again, ensure_ascii=False)).encode("utf-8")

    return mask


def scrubbed(bench: Bench, value: Any) -> Any:
    """A JSON value whose strings that are JSON texts are masked as a pinned case's are
    (_pins.case_text): as they decode, however deep. The caller masks the text it writes too
    (the strings that are not JSON texts are hidden there, in place): `value` itself when
    there is no secret or no such string."""
    from ..ctx.standins import mask_of

    mask = mask_of(bench.providers)
    if mask is None:
        return value
    if not _NESTED.search(json.dumps(value, ensure_ascii=False, default=str)):
        return value
    from ..pins.case import scrub_json

    return scrub_json(mask, value, 0)


def _still_json(text: str, masked: str) -> None:
    """E_SECRET when masking broke a JSON text (a secret that matches its own syntax, `": "`):
    the bundle would not open, and the secret cannot be hidden in place."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return  # not JSON before: nothing to keep
    try:
        json.loads(masked)
    except (ValueError, RecursionError):
        line = next(
            (n for n, (a, b) in enumerate(zip(text.splitlines(), masked.splitlines()), 1) if a != b), 1
        )
        raise WorkbenchError(
            "E_SECRET",
            f"cannot export: line {line} of a JSON entry would hold a secret in a form the mask "
            "cannot hide in place; nothing was written",
            line=line,
        ) from None


def _json(value: Any) -> bytes:
    from ..pins.case import json_default

    return (json.dumps(value, indent=1, ensure_ascii=False, default=json_default) + "\n").encode("utf-8")


def _masked_json(bench: Bench, value: Any, entry: str) -> bytes:
    """`value` as a JSON entry masked as a pinned case is (_pins.case_text, the one mask): each
    string as it decodes, JSON texts inside strings read and masked too (a secret escaped
    deeper than the mask's own forms); E_SECRET when one would stay where it cannot be hidden."""
    from ..ctx.standins import mask_of

    mask = mask_of(bench.providers)
    if mask is None:
        return _json(value)
    text = _json(value).decode("utf-8")
    if not _NESTED.search(text):  # no JSON text inside a string: the mask hides each in place
        return mask(text).encode("utf-8")
    from ..pins.case import scrub_json

    text = _json(scrub_json(mask, value, 0)).decode("utf-8")
    if mask(text) != text:  # a secret across the text's own quotes and commas
        raise WorkbenchError(
            "E_SECRET",
            f"cannot export: the bundle's {entry} would hold a secret in a form the mask cannot hide "
            "in place; nothing was written",
            entry=entry,
        )
    return text.encode("utf-8")


def export(bench: Bench, path: str | os.PathLike[str], *, calls: Iterable[Any] | None = None) -> Path:
    """Write the bench as a bundle at `path` (*.gemrepro): its state, its calls (a pinned case
    for the latest), the gem's files with their hashes; secrets masked. Returns the path."""
    from ..ctx.state import dump
    from ..ctx.statejson import dump_state

    target = Path(path)
    if not is_bundle(target):
        raise UsageError(f"export({str(path)!r}): name the bundle *{SUFFIX}")
    _check_destination(target)
    limits = bench.limits
    with bench.core.lock:
        bench.check_open()
        mask = _masker(bench)
        entries: dict[str, bytes] = {STATE: _masked_json(bench, dump_state(bench), STATE)}
        chosen = _chosen(bench, calls)
        start, why_not = _start(bench, chosen)
        if start is not None:
            entries[START] = _masked_json(bench, start, START)
        records = []
        for n, res in enumerate(chosen):
            rec = _record(bench, res)
            text, why = _case_of(bench, res)
            if text is not None:  # case_text masked it already
                rec["case"] = name = f"cases/{n:04d}.json"
                entries[name] = text.encode("utf-8")
            else:
                rec["why"] = why
            records.append(rec)
        for rel, data in gem_files(bench.manifest.root, limits):
            entries["gem/" + rel] = mask(data)
        clock = bench.clock
        meta = {
            "bundle": BUNDLE_FORMAT,
            "workbench": __version__,
            "platform": bench.profile.name,
            "gem": bench.manifest.id,
            "providers": bench.provider_kinds,
            "clock": {"mode": clock.mode, "at": clock.time()},
            "seed": bench.seed,
            # the bench's setup as its first exported call found it: what a replay compares its
            # own with (start.json's, which the replay puts, may have been edited)
            "setup": scrubbed(bench, start["setup"] if start is not None else dump(bench, roles=("setup",))),
            **({} if start is not None else {"start": why_not}),
            "calls": records,
            "entries": [
                {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                for n, d in entries.items()
            ],
        }
        head = _masked_json(bench, meta, META)
    total = len(head) + sum(len(d) for d in entries.values())
    if total > limits.bundle_bytes:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"the bundle would be {total:,} bytes, over Limits.bundle_bytes",
            limit=limits.bundle_bytes,
        )
    return _write_zip(target, {META: head, **entries}, ratio=limits.bundle_ratio)


def _method(data: bytes, ratio: int) -> int:
    """Deflated, unless that packs it tighter than a reader's zip-bomb bound lets through."""
    if len(data) <= RATIO_SLACK:
        return zipfile.ZIP_DEFLATED
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    size = len(c.compress(data)) + len(c.flush())
    return zipfile.ZIP_STORED if len(data) > ratio * size else zipfile.ZIP_DEFLATED


#: what a destination's OSError is said as (errno -> code); the rest is E_PATH
_WRITE_CODES = {
    errno.EISDIR: "E_IS_A_FOLDER",
    errno.ENOTDIR: "E_NOT_A_FOLDER",
    errno.EEXIST: "E_NOT_A_FOLDER",  # mkdir of a parent that is a file
    errno.EACCES: "E_PERM_DENIED",
    errno.EPERM: "E_PERM_DENIED",
    errno.EROFS: "E_PERM_DENIED",
    errno.ENOSPC: "E_TOO_LARGE",
}


def unwritable(path: Path, exc: OSError | ValueError, what: str = "the bundle") -> WorkbenchError:
    """The coded error of an OSError (or a NUL's ValueError) writing `what` at `path`."""
    code = _WRITE_CODES.get(getattr(exc, "errno", None) or 0, "E_PATH")
    why = getattr(exc, "strerror", None) or str(exc)  # ValueError: an embedded NUL
    if code == "E_NOT_A_FOLDER":
        why = "a folder on its way is a file"
    hint = f" (name a file *{SUFFIX})" if what == "the bundle" else ""
    return WorkbenchError(
        code, f"cannot write {what} at {path}: {why}; nothing was written{hint}", path=str(path)
    )


def _check_destination(path: Path) -> None:
    """A bundle replaces a file or is made anew; never a folder, never through a link. Said
    before the work (the rename would refuse a folder too, after it)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:  # a name too long, a parent that is a file, a NUL
        if isinstance(exc, OSError) and exc.errno == errno.ENOTDIR:
            return  # its parent is a file: mkdir says so
        raise unwritable(path, exc) from None
    if stat.S_ISLNK(mode):
        raise WorkbenchError(
            "E_PATH", f"{path} is a link: a bundle is not written through one", path=str(path)
        )
    if stat.S_ISDIR(mode):
        raise WorkbenchError(
            "E_IS_A_FOLDER",
            f"cannot write the bundle at {path}: it is a folder; name a file *{SUFFIX} (nothing was written)",
            path=str(path),
        )


def _write_zip(path: Path, entries: dict[str, bytes], *, ratio: int) -> Path:
    """The zip at `path`, atomically: a temp file beside it, then a rename (never a half file,
    never in place of a folder). An unusable destination is a coded error, not an OSError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    except (OSError, ValueError) as exc:
        raise unwritable(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in entries.items():
                info = zipfile.ZipInfo(name, date_time=_STAMP)
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = _method(data, ratio)
                z.writestr(info, data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise unwritable(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
