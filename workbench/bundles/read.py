"""Reading a repro bundle (bundles/export.py writes them): a file someone else wrote, so hostile input.

The file is read whole within Limits.bundle_bytes and parsed from memory (no second read of a
file that may change). Every entry is checked before any byte is unpacked: its name (no
absolute path, drive, backslash, `..`, control character), its kind (no link, device or
encrypted entry), no duplicate (case-insensitively), at most Limits.bundle_entries. Entries are
read through a bounded reader that trusts no header size: all of them together within
bundle_bytes unpacked, each within bundle_ratio of its compressed size (a zip bomb stops
early). Every entry must be listed in bundle.json with its sha256, and match it. The gem is
unpacked into a fresh folder the bench owns, file by file (O_EXCL, O_NOFOLLOW), never by
zipfile's extract. Each refusal is WorkbenchError("E_BUNDLE") naming the file and the entry.
What of the unpacked gem would run outside the sandbox (Python tools, tests/doctor.py) is
`host_code`; `check_trust` refuses it (E_TRUST) unless the opener trusts the bundle.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .._errors import WorkbenchError
from .._json import MAX_JSON_DEPTH, load_file_json
from ..platforms.base import Limits
from .export import FORMATS, META, RATIO_SLACK, START, STATE

__all__ = ["Bundle", "bundle_platform", "check_trust", "host_code", "read_bundle", "unpack"]

_CHUNK = 64 * 1024
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\\]|^[A-Za-z]:|^/")
_CASE = re.compile(r"cases/[0-9]{4}\.json")
_SHA = re.compile(r"[0-9a-f]{64}")
MAX_NAME_CHARS = 4096
SHOWN_FILES = 10  # of the host code an E_TRUST names (a bundle may have thousands of tools)


@dataclass
class Bundle:
    """A bundle read and checked: its bundle.json, state, gem files and pinned cases."""

    path: Path
    meta: dict[str, Any]
    state: dict[str, Any]
    gem: dict[str, bytes] = field(default_factory=dict)  # gem-relative path -> bytes
    cases: dict[str, bytes] = field(default_factory=dict)  # entry name -> the case's JSON text
    # format 2: {"state", "setup"} the first exported call found (None: the bench lost them)
    start: dict[str, Any] | None = None


def _bad(path: Path, entry: str, why: str, **details: Any) -> WorkbenchError:
    entry = entry[:200]
    shown = repr(entry) if _BAD_NAME.search(entry) else entry  # a control character, said visibly
    return WorkbenchError("E_BUNDLE", f"{path}: {shown}: {why}", file=str(path), entry=entry, **details)


def _open_regular(path: Path, limit: int) -> BinaryIO:
    """The file opened for reading: a regular file (a FIFO is refused, never waited on) of at
    most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _bad(path, "the file", f"cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _bad(path, "the file", "is not a regular file")
        if info.st_size > limit:
            raise _bad(
                path,
                "the file",
                f"is {info.st_size:,} bytes, over Limits.bundle_bytes ({limit:,})",
                limit=limit,
            )
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _raw(path: Path, limit: int) -> bytes:
    """The file's bytes, read once (a file that grows meanwhile is cut at `limit` + 1)."""
    with _open_regular(path, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise _bad(path, "the file", f"is over Limits.bundle_bytes ({limit:,} bytes)", limit=limit)
    return data


CD_BYTES_PER_ENTRY = 300  # a central directory entry is 46 bytes and its name: ~100 in practice


def _check_directory(path: Path, raw: bytes, entries: int) -> None:
    """Refuse a central directory that declares more than `entries` entries or is larger than
    they need, before zipfile parses it (one object per entry: a 256 MiB file of 46-byte
    entries would be millions of them)."""
    at = raw.rfind(b"PK\x05\x06", max(0, len(raw) - 65_557))  # the end record, comment included
    if at < 0 or len(raw) < at + 22:
        return  # not a zip: zipfile says so
    count = int.from_bytes(raw[at + 10 : at + 12], "little")
    size = int.from_bytes(raw[at + 12 : at + 16], "little")
    z64 = raw.rfind(b"PK\x06\x06", max(0, at - 1024), at)
    if z64 >= 0 and len(raw) >= z64 + 56:  # zip64: its own counts
        count = max(count, int.from_bytes(raw[z64 + 32 : z64 + 40], "little"))
        size = max(size, int.from_bytes(raw[z64 + 40 : z64 + 48], "little"))
    if count > entries or size > 64 * 1024 + entries * CD_BYTES_PER_ENTRY:
        raise _bad(
            path,
            "the file",
            f"declares {count:,} entries in {size:,} bytes, over Limits.bundle_entries ({entries:,})",
            limit=entries,
        )


def _check_name(path: Path, info: zipfile.ZipInfo) -> str:
    name = info.filename
    if not name or len(name) > MAX_NAME_CHARS or _BAD_NAME.search(name):
        raise _bad(
            path,
            name,
            "is not a relative path with '/' (absolute, a drive, a backslash or a control character)",
        )
    parts = name.rstrip("/").split("/") if info.is_dir() else name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise _bad(path, name, "has an empty, '.' or '..' segment: it would land outside the bundle's folder")
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if stat.S_ISLNK(mode):
        raise _bad(path, name, "is a link: a bundle holds files only")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise _bad(path, name, "is not a file or a folder (a device, FIFO or socket)")
    if info.flag_bits & 0x1:
        raise _bad(path, name, "is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _bad(
            path, name, f"uses compression method {info.compress_type}: a bundle is stored or deflated"
        )
    return name


def _read_entry(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, ratio: int) -> bytes:
    """The entry's bytes, read in chunks: refused once past `budget` or `ratio` times its
    compressed size (whatever its header claims)."""
    cap = ratio * max(info.compress_size, 1) + RATIO_SLACK
    out = bytearray()
    try:
        with z.open(info) as f:
            while chunk := f.read(_CHUNK):
                out += chunk
                if len(out) > budget:
                    raise _bad(path, info.filename, "unpacks past Limits.bundle_bytes (all entries together)")
                if len(out) > cap:
                    raise _bad(
                        path,
                        info.filename,
                        f"unpacks to more than {ratio} times its compressed size (Limits.bundle_ratio): a zip bomb?",
                    )
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
        raise _bad(path, info.filename, f"cannot be unpacked: {exc}") from None
    return bytes(out)


def _json(path: Path, entry: str, data: bytes) -> Any:
    value, why = load_file_json(data)
    if why is not None:
        raise _bad(path, entry, why, limit=MAX_JSON_DEPTH)
    return value


def read_bundle(path: str | os.PathLike[str], limits: Limits | None = None) -> Bundle:
    """The bundle at `path`, every entry checked (E_BUNDLE naming the first bad one)."""
    path = Path(path)
    limits = limits or Limits()
    raw = _raw(path, limits.bundle_bytes)
    _check_directory(path, raw, limits.bundle_entries)
    try:
        z = zipfile.ZipFile(io.BytesIO(raw))
        infos = z.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise _bad(path, "the file", f"is not a bundle (a zip): {exc}") from None
    if len(infos) > limits.bundle_entries:
        raise _bad(
            path,
            "the file",
            f"has {len(infos):,} entries, over Limits.bundle_entries ({limits.bundle_entries:,})",
        )
    seen: set[str] = set()
    for info in infos:  # every name and kind before any byte is unpacked
        name = _check_name(path, info)
        folded = name.rstrip("/").casefold()
        if folded in seen:
            raise _bad(path, name, "appears twice (or twice but for case): which one is meant?")
        seen.add(folded)
    budget = limits.bundle_bytes
    data: dict[str, bytes] = {}
    for info in infos:
        if info.is_dir():
            continue
        data[info.filename] = _read_entry(path, z, info, budget, limits.bundle_ratio)
        budget -= len(data[info.filename])
    if META not in data:
        raise _bad(path, META, "is missing: is it a bundle written by bench.export?")
    meta = _check_meta(path, _json(path, META, data.pop(META)))
    listed = {e["name"]: e for e in meta["entries"]}
    for name, blob in data.items():
        if name not in listed:
            raise _bad(path, name, f"is not listed in {META}")
        if hashlib.sha256(blob).hexdigest() != listed[name]["sha256"]:
            raise _bad(path, name, f"does not match its sha256 in {META}: it was changed after export")
    for name in listed:
        if name not in data:
            raise _bad(path, name, f"is listed in {META} but not in the bundle")
    if STATE not in data:
        raise _bad(path, STATE, "is missing")
    state = _json(path, STATE, data.pop(STATE))
    if not isinstance(state, dict):
        raise _bad(path, STATE, "is not an object of files, kv, documents and sql")
    out = Bundle(path, meta, state)
    if START in data:
        out.start = _check_start(path, _json(path, START, data.pop(START)))
    for name, blob in data.items():
        if name.startswith("gem/"):
            out.gem[name[4:]] = blob
        elif _CASE.fullmatch(name):
            out.cases[name] = blob
        else:
            raise _bad(
                path,
                name,
                "is not part of a bundle (bundle.json, state.json, start.json, gem/…, cases/NNNN.json)",
            )
    _check_calls(path, out)
    return out


def bundle_platform(path: str | os.PathLike[str], limits: Limits | None = None) -> str:
    """The platform a bundle names (its bundle.json only, bounded): what `%gem open` and the
    command's flags are checked against before the bundle is read whole."""
    path = Path(path)
    limits = limits or Limits()
    try:
        with _open_regular(path, limits.bundle_bytes) as f, zipfile.ZipFile(f) as z:
            info = z.getinfo(META)
            _check_name(path, info)
            meta = _check_meta(
                path, _json(path, META, _read_entry(path, z, info, limits.case_bytes, limits.bundle_ratio))
            )
    except KeyError:
        raise _bad(path, META, "is missing: is it a bundle written by bench.export?") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise _bad(path, "the file", f"is not a bundle (a zip): {exc}") from None
    return str(meta["platform"])


def _check_meta(path: Path, meta: Any) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise _bad(path, META, "is not an object")
    if type(meta.get("bundle")) is not int or meta["bundle"] not in FORMATS:
        raise _bad(
            path,
            f"{META}: bundle",
            f"format {str(meta.get('bundle'))[:20]!r}: this workbench reads formats "
            f"{', '.join(map(str, FORMATS))}",
            field="bundle",
        )
    if not isinstance(meta.get("setup", {}), dict):
        raise _bad(path, f"{META}: setup", "is not an object of the bench's setup parts", field="setup")
    if not isinstance(meta.get("start", ""), str):
        raise _bad(path, f"{META}: start", "is not a text (why the bundle has no start.json)", field="start")
    for key, kind in (("gem", str), ("platform", str), ("entries", list), ("calls", list), ("clock", dict)):
        if not isinstance(meta.get(key), kind):
            raise _bad(path, f"{META}: {key}", f"is not a {kind.__name__}", field=key)
    seed = meta.get("seed")
    if seed is not None and (type(seed) is not int or not -(2**63) <= seed < 2**63):
        raise _bad(path, f"{META}: seed", "is not a whole number", field="seed")
    clock = meta["clock"]
    if clock.get("mode") not in ("real", "running", "frozen") or not _instant(clock.get("at")):
        raise _bad(
            path, f"{META}: clock", "is not {mode: real | running | frozen, at: epoch seconds}", field="clock"
        )
    for i, e in enumerate(meta["entries"]):
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("name"), str)
            or not isinstance(e.get("sha256"), str)
            or not _SHA.fullmatch(e["sha256"])
        ):
            raise _bad(
                path,
                f"{META}: entries.{i}",
                "is not {name, sha256 (64 hex digits), size}",
                field=f"entries.{i}",
            )
    return meta


def _instant(value: Any) -> bool:
    """Whether `value` is epoch seconds the bench's clock can stand at (1970 to about 5138)."""
    from .._errors import UsageError
    from ..ctx.clock import parse_instant

    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        parse_instant(value)
    except UsageError:
        return False
    return True


def _check_calls(path: Path, bundle: Bundle) -> None:
    gem = bundle.meta["gem"]
    for i, rec in enumerate(bundle.meta["calls"]):
        where = f"{META}: calls.{i}"
        if (
            not isinstance(rec, dict)
            or not isinstance(rec.get("tool"), str)
            or not isinstance(rec.get("call"), dict)
            or not isinstance(rec.get("result"), dict)
        ):
            raise _bad(path, where, "is not {tool, input, options, call, result}", field=f"calls.{i}")
        for key in ("seed", "ids"):
            v = rec["call"].get(key)
            if v is not None and (type(v) is not int or not 0 <= v < 2**63):
                raise _bad(path, f"{where}.call.{key}", "is not a whole number", field=f"calls.{i}")
        after = rec["call"].get("crash_after")
        if after is not None and (type(after) is not int or not 0 <= after <= Limits().trace_rows):
            raise _bad(path, f"{where}.call.crash_after", "is not a number of ctx calls", field=f"calls.{i}")
        ms = rec["call"].get("clock_ms")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and not _instant(ms / 1000):
            raise _bad(
                path, f"{where}.call.clock_ms", "is not a time the clock can stand at", field=f"calls.{i}"
            )
        _check_outside(path, where, rec)
        case = rec.get("case")
        if case is None:
            continue
        if case not in bundle.cases:
            raise _bad(path, f"{where}.case", f"names {str(case)[:60]!r}, which the bundle has not")
        claimed = _json(path, case, bundle.cases[case])
        if not isinstance(claimed, dict) or claimed.get("gem") != gem or claimed.get("tool") != rec["tool"]:
            other = claimed.get("gem") if isinstance(claimed, dict) else None
            raise _bad(
                path,
                case,
                f"claims gem {str(other)[:60]!r}, tool {str(claimed.get('tool') if isinstance(claimed, dict) else None)[:60]!r}; the bundle is of gem {gem!r}",
                field="gem",
            )


def _check_start(path: Path, start: Any) -> dict[str, Any]:
    """start.json: {state: {part: JSON}, setup: {part: JSON}} (each part checks its own JSON
    when the replay puts it: E_BUNDLE naming the field)."""
    if not isinstance(start, dict) or set(start) - {"state", "setup"}:
        raise _bad(path, START, "is not {state, setup}", field="start")
    for key in ("state", "setup"):
        if not isinstance(start.get(key, {}), dict):
            raise _bad(path, f"{START}: {key}", "is not an object of the bench's parts", field=key)
    return start


def _check_outside(path: Path, where: str, rec: dict[str, Any]) -> None:
    """A call's `outside` (format 2): the answers its replay serves back, checked as a pinned
    case's are (ctx/recorded.check_replayed), each refusal E_BUNDLE naming the call's field."""
    from ..ctx.recorded import check_replayed

    out = rec.get("outside")
    if out is None:
        return
    if not isinstance(out, dict) or not isinstance(out.get("why", ""), str):
        raise _bad(path, f"{where}.outside", "is not {served, http, secrets, credentials}", field="outside")
    if out.get("served") is None:
        return
    shaped = {
        "http": out.get("http", []),
        "served": out["served"],
        "secrets": out.get("secrets", []),
        "credentials": out.get("credentials", {}),
        "call": rec["call"],
        "options": rec.get("options", {}),
    }
    for key, kind in (("http", list), ("served", list), ("secrets", list), ("credentials", dict)):
        if not isinstance(shaped[key], kind):
            raise _bad(path, f"{where}.outside.{key}", f"is not a {kind.__name__}", field=key)
    if not isinstance(shaped["options"], dict):
        raise _bad(path, f"{where}.options", "is not an object", field="options")
    if len(shaped["served"]) + len(shaped["http"]) > 2 * Limits().trace_rows:
        raise _bad(path, f"{where}.outside", "holds more answers than a call records (Limits.trace_rows)")
    try:
        check_replayed(path, shaped)
    except WorkbenchError as exc:  # E_CASE of a case's field: the bundle's call's
        field_ = str(exc.details.get("field", ""))
        raise _bad(path, f"{where}.outside", exc.message.removeprefix(f"{path}: "), field=field_) from None


def unpack(bundle: Bundle, dest: Path) -> Path:
    """Write the bundle's gem files under `dest` (a fresh, empty folder the caller owns) and
    return it; each file made anew (O_EXCL) and never through a link."""
    dest.mkdir(mode=0o700)
    root = os.path.realpath(dest)
    for rel, data in sorted(bundle.gem.items()):
        target = os.path.join(root, *rel.split("/"))
        parent = os.path.dirname(target)
        try:
            os.makedirs(parent, exist_ok=True)
            if (
                os.path.commonpath([root, os.path.realpath(parent)]) != root
            ):  # names were checked: a second guard
                raise _bad(bundle.path, "gem/" + rel, "would land outside the bundle's folder")
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:  # "a" and "a/b" both files: one is not a folder
            raise _bad(bundle.path, "gem/" + rel, f"cannot be unpacked: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return dest


def host_code(root: Path) -> list[str]:
    """What of the gem at `root` would run in the workbench's own process, outside the Deno
    sandbox: its Python tools' files (as the manifest names them) and tests/doctor.py, whose
    invariants the doctor and a doctor's case import. Loading the manifest runs nothing of
    the gem on the host (an Ekanos integration is described in a sandboxed Worker)."""
    from ..platforms import KNOWN, detect
    from ..runners import RUNNER_FOR

    profile = detect(root)
    tools: list[str] = []
    # a built-in platform's Python tool is a .py file: with none, its manifest (an Ekanos
    # integration's description costs a Deno Worker) need not be loaded twice
    if profile.name not in KNOWN or _has_python_file(root):
        manifest = profile.load(root)
        tools = sorted(
            {
                Path(os.path.relpath(t.file, manifest.root)).as_posix()
                for t in manifest.tools.values()
                if RUNNER_FOR.get(t.language) == "python"
            }
        )
    # lexists on the folder as unpacked: a case-insensitive disk finds TESTS/Doctor.py as the
    # doctor would
    doctor = os.path.lexists(os.path.join(root, "tests", "doctor.py"))
    return tools + (["tests/doctor.py"] if doctor else [])


def _has_python_file(root: Path) -> bool:
    return any(f.lower().endswith(".py") for _, _, files in os.walk(root) for f in files)


def check_trust(path: Path, root: Path, trust: bool) -> None:
    """E_TRUST, in one line naming what would run, when the bundle at `path` (its gem unpacked
    at `root`) holds host code and its opener did not say `trust`."""
    found = host_code(root)
    if trust or not found:
        return
    tools = [f for f in found if f != "tests/doctor.py"]
    parts = []
    if tools:
        more = f" and {len(tools) - SHOWN_FILES:,} more" if len(tools) > SHOWN_FILES else ""
        parts.append(f"{', '.join(tools[:SHOWN_FILES])}{more} (Python tools)")
    if len(tools) < len(found):
        parts.append("tests/doctor.py (the doctor's invariants)")
    raise WorkbenchError(
        "E_TRUST",
        f"bundle {path} would run host code: {', '.join(parts)}; pass --trust / trust=True if you "
        "trust its author",
        file=str(path),
        would_run=found[:100],
        files=len(found),
        option="trust",
    )
