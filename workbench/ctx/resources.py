"""ctx.resources (R1–R5, SEC2, SEC5): the rules, once, over a mock or real source and for both
runners.

R1 `ctx.resources` exists only when the manifest declares `resources` (Python: reading the
   attribute raises AttributeError saying so; JS: `ctx.resources` is undefined).
R2 `path(id)` returns an absolute local path, downloading first when needed, into a content-
   addressed cache `<state dir>/resources/<sha256>/<id>` written atomically (temp + rename).
   Concurrent calls for one id download once (one attempt at a time per resource, run in a
   background thread); `"required": true` starts the download when the bench opens.
R3 the sha256 is verified: a mismatch fails that address, naming both hashes; a new sha256 in
   the manifest is a new path, so the old file is never served for it.
R4 the cache is readable by that gem's sandbox (added to its --allow-read), never writable:
   files are chmod read-only and the worker has no write permission; another gem's cache is
   outside its --allow-read.
R5 a failure is E_RESOURCE listing every address tried and why (HTTP status, hash mismatch
   with both hashes, connection error); nothing is remembered, the next call tries again
   (calls waiting on the same attempt share its error). An undeclared id is E_NOT_FOUND
   naming the declared ids.
SEC2 every path built from manifest data stays in its folder, whatever the loader let through:
   the id must be a safe file name and the sha256 64 lowercase hex digits (else E_MANIFEST),
   the resolved target must lie inside the cache, and a mock fixture inside the gem's
   `fixtures/resources/` (symlinks resolved).
SEC5 a download is streamed to a temp file next to its target (never whole in memory), cut at
   `DOWNLOAD_BYTES` (2 GiB) and `DOWNLOAD_SECONDS` (30 min) per attempt over all addresses. A
   tool's `path()` waits at most for the call's remaining time (E_TIMEOUT); the download then
   goes on in the background and a later call gets the file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..gem.names import name_problem
from .limits import DEFAULT
from .spec import CapabilitySpec, Flag, OpenContext, Option

if TYPE_CHECKING:
    from ..providers.resources import Source
    from ._session import CallSession

METHODS = ("path",)


SHA256 = re.compile(r"[0-9a-f]{64}")
#: bounds of one download attempt (all its addresses): size of the file, seconds in total
DOWNLOAD_BYTES = DEFAULT.resource_bytes  # the cache is the bench's, made before its calls
DOWNLOAD_SECONDS = DEFAULT.resource_seconds


class _Attempt:
    """One download attempt; every caller that waits on it gets its outcome (R5)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: WorkbenchError | None = None
        self.received = 0


class _Slot:
    """One resource's running attempt, if any."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: _Attempt | None = None


class ResourceCache:
    """The bench's resource files: one per (sha256, id), fetched once from `source`."""

    def __init__(self, specs: tuple[Mapping[str, Any], ...], root: Path, source: Source) -> None:
        self.specs = {
            s["id"]: dict(s) for s in specs if isinstance(s, Mapping) and isinstance(s.get("id"), str)
        }
        self.root = root  # <state dir>/resources: the sandbox may read it (R4)
        self.source = source
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._background: list[threading.Thread] = []

    def target(self, rid: str) -> Path:
        """Where resource `rid` lives; E_MANIFEST / E_PATH when manifest data would lead
        outside the cache (SEC2)."""
        spec = self.spec(rid)
        index = list(self.specs).index(rid)
        why = name_problem(rid)
        if why:
            raise WorkbenchError(
                "E_MANIFEST",
                f"resource id {why}",
                id=rid,
                field=f"/resources/{index}/id",
            )
        sha = spec.get("sha256")
        if not isinstance(sha, str) or not SHA256.fullmatch(sha):
            raise WorkbenchError(
                "E_MANIFEST",
                f"resource {rid!r}: sha256 must be 64 lowercase hex digits",
                id=rid,
                field=f"/resources/{index}/sha256",
            )
        target = self.root / sha / rid
        if not target.resolve().is_relative_to(self.root.resolve()):  # e.g. a planted symlink
            raise WorkbenchError(
                "E_PATH", f"resource {rid!r}: its cache path leads outside {self.root} (SEC2)", id=rid
            )
        return target

    def spec(self, rid: Any) -> dict[str, Any]:
        if not isinstance(rid, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"resources.path(id): id must be a string, not {type(rid).__name__}",
                field="id",
            )
        spec = self.specs.get(rid)
        if spec is None:
            declared = ", ".join(repr(i) for i in self.specs) or "none"
            raise WorkbenchError(
                "E_NOT_FOUND",
                f"resource {rid[:200]!r} is not declared in manifest.json (declared: {declared})",
                id=rid[:200],
                declared=list(self.specs),
            )
        return spec

    def start_required(self) -> None:
        """R2: `"required": true` resources start downloading now, in the background."""
        for rid, spec in self.specs.items():
            if spec.get("required") is not True:
                continue
            try:
                target = self.target(rid)
            except WorkbenchError:
                continue  # unsafe manifest data: nothing is written; path() reports it
            if not target.is_file():
                self._start(rid, target)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the downloads running now (tests, notebooks)."""
        for t in list(self._background):
            t.join(timeout)

    def _slot(self, rid: str) -> _Slot:
        key = f"{self.specs[rid]['sha256']}/{rid}"
        with self._slots_lock:
            return self._slots.setdefault(key, _Slot())

    def path(self, rid: Any, timeout: float | None = None) -> str:
        """The resource's local path, downloading it first; waits at most `timeout` seconds
        (None: until the attempt ends, itself bounded by DOWNLOAD_SECONDS)."""
        target = self.target(rid)
        if target.is_file():  # R2: already here, return at once
            return str(target)
        attempt = self._start(rid, target)
        if not attempt.done.wait(timeout):
            raise WorkbenchError(
                "E_TIMEOUT",
                f"resources.path({rid!r}): the call ran out of time "
                f"waiting for the download ({attempt.received:,} bytes so far); it "
                "goes on in the background and a later call gets the file",
                id=rid,
                method="resources.path",
            )
        if attempt.error is not None:
            raise attempt.error  # the attempt we waited on failed: share its error (R5)
        return str(target)

    def _start(self, rid: str, target: Path) -> _Attempt:
        """The running attempt for `rid`, or a new one in a background thread."""
        slot = self._slot(rid)
        with slot.lock:
            if slot.current is not None:
                return slot.current
            attempt = slot.current = _Attempt()
        thread = threading.Thread(
            target=self._run, args=(rid, target, slot, attempt), daemon=True, name=f"resource-{rid}"
        )
        self._background = [t for t in self._background if t.is_alive()] + [thread]
        thread.start()
        return attempt

    def _run(self, rid: str, target: Path, slot: _Slot, attempt: _Attempt) -> None:
        try:
            if not target.is_file():
                self._download(rid, target, attempt)
        except WorkbenchError as exc:
            attempt.error = exc
        except Exception as exc:  # a broken source: still the tool's error to read, not a hang
            attempt.error = WorkbenchError(
                "E_RESOURCE", f"resource {rid!r} could not be downloaded: {type(exc).__name__}: {exc}", id=rid
            )
        finally:  # the file (if any) is in place first: a new caller sees it or starts afresh
            with slot.lock:
                slot.current = None
            attempt.done.set()

    def _download(self, rid: str, target: Path, attempt: _Attempt) -> None:
        from ..providers.resources import FetchError

        spec = self.specs[rid]
        want = spec["sha256"]
        failures: list[dict[str, str]] = []
        target.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + DOWNLOAD_SECONDS
        for address in self.source.addresses(spec):
            if time.monotonic() >= deadline:
                failures.append(
                    {
                        "address": address,
                        "reason": f"not tried: the attempt's "
                        f"{DOWNLOAD_SECONDS:g} s (DOWNLOAD_SECONDS) were used up",
                    }
                )
                continue
            fd, tmp = tempfile.mkstemp(prefix=f".{rid}.", suffix=".part", dir=target.parent)
            digest = hashlib.sha256()
            attempt.received = 0
            try:
                with os.fdopen(fd, "wb") as f:

                    def write(chunk: bytes) -> None:
                        attempt.received += len(chunk)
                        if attempt.received > DOWNLOAD_BYTES:
                            raise FetchError(
                                f"larger than {DOWNLOAD_BYTES:,} bytes, the cap of one "
                                "resource (DOWNLOAD_BYTES)"
                            )
                        if time.monotonic() > deadline:
                            raise FetchError(
                                f"timed out after {DOWNLOAD_SECONDS:g} s "
                                "(DOWNLOAD_SECONDS, the bound of one attempt)"
                            )
                        digest.update(chunk)  # noqa: B023 (called only in this iteration)
                        f.write(chunk)

                    self.source.fetch(address, spec, write, deadline=deadline, max_bytes=DOWNLOAD_BYTES)
                got = digest.hexdigest()
                if got != want:
                    raise FetchError(f"sha256 mismatch: expected {want}, got {got}")
                os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)  # R4: read-only
                os.replace(tmp, target)
                return
            except FetchError as exc:
                failures.append({"address": address, "reason": str(exc)})
            except OSError as exc:
                failures.append({"address": address, "reason": f"{type(exc).__name__}: {exc}"})
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        listed = "; ".join(f"{f['address']}: {f['reason']}" for f in failures)
        raise WorkbenchError(
            "E_RESOURCE",
            f"resource {rid!r} could not be downloaded ({self.source.kind}): {listed or 'no address to try'}",
            id=rid,
            sha256=want,
            attempts=failures,
        )


class Resources:
    """ctx.resources of one call."""

    def __init__(self, session: CallSession) -> None:
        self.session = session

    def path(self, id: str) -> str:
        cache: ResourceCache | None = self.session.providers.backends.get("resources")
        if cache is None or not self.session.manifest.resources:
            raise WorkbenchError(
                "E_NOT_FOUND",
                f"resource {id!r} is not declared in manifest.json (declared: none)",
                id=id,
                declared=[],
            )
        return cache.path(id, timeout=self.session.remaining("resources.path"))


def make_cache(manifest: Any, *, state_dir: Path, source: Source) -> ResourceCache | None:
    """The bench's cache over `source` (mock or real: the providers' choice), or None when
    the manifest declares no resources (R1)."""
    if not manifest.resources:
        return None
    root = state_dir / "resources"
    root.mkdir(parents=True, exist_ok=True)
    return ResourceCache(manifest.resources, root, source)


def _backend(opening: OpenContext) -> ResourceCache | None:
    """ctx.resources' backend: the cache over fixtures/resources/ and open(resources=) (mock)
    or the network (providers={'resources': 'real'}); None when none are declared (R1)."""
    from ..providers.resources import HttpSource, MockSource

    if opening.kinds.get("resources", "mock") == "mock":
        source: Source = MockSource(opening.manifest.root, opening.options.get("resources"))
    else:  # the URLs are the manifest's: each hop's addresses checked as ctx.http's are
        from .http_private import OPTION, PrivateHosts

        source = HttpSource(guard_for=PrivateHosts(opening.options.get(OPTION)).guard_url)
    return make_cache(opening.manifest, source=source, state_dir=opening.state_dir)


#: ctx.resources as a unit (R1-R5)
SPEC = CapabilitySpec(
    impl="resources",
    backend=_backend,
    title="ctx.resources",
    implementation=Resources,
    options=(
        Option(
            "resources",
            "mock ctx.resources files, {id: bytes or path}; with real providers they are downloaded",
            type="Mapping[str, bytes | str | os.PathLike[str]] | None",
            default_doc="the gem's fixtures/resources/<id>",
            flags=(
                Flag("--resource", how="pair", metavar="ID=PATH", help="a mock resource's file (repeatable)"),
            ),
        ),
    ),
)
