"""ctx.resources (R1–R5): the rules, once, over a mock or real source and for both runners.

R1 `ctx.resources` exists only when the manifest declares `resources` (Python: reading the
   attribute raises AttributeError saying so; JS: `ctx.resources` is undefined).
R2 `path(id)` returns an absolute local path, downloading first when needed, into a content-
   addressed cache `<state dir>/resources/<sha256>/<id>` written atomically (temp + rename).
   Concurrent calls for one id download once (a lock per resource); `"required": true`
   starts the download when the bench opens (a background thread; `path` waits for it).
R3 the sha256 is verified: a mismatch fails that address, naming both hashes; a new sha256 in
   the manifest is a new path, so the old file is never served for it.
R4 the cache is readable by that gem's sandbox (added to its --allow-read), never writable:
   files are chmod read-only and the worker has no write permission; another gem's cache is
   outside its --allow-read.
R5 a failure is E_RESOURCE listing every address tried and why (HTTP status, hash mismatch
   with both hashes, connection error); nothing is remembered, the next call tries again
   (calls waiting on the same attempt share its error). An undeclared id is E_NOT_FOUND
   naming the declared ids.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ..providers.resources import Source
    from ._session import CallSession

METHODS = ("path",)


class _Slot:
    """One resource's lock and the outcome of its latest attempt."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts = 0
        self.error: WorkbenchError | None = None


class ResourceCache:
    """The bench's resource files: one per (sha256, id), fetched once from `source`."""

    def __init__(self, specs: tuple[Mapping[str, Any], ...], root: Path, source: "Source") -> None:
        self.specs = {s["id"]: dict(s) for s in specs}
        self.root = root          # <state dir>/resources: the sandbox may read it (R4)
        self.source = source
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._background: list[threading.Thread] = []

    def target(self, rid: str) -> Path:
        spec = self.spec(rid)
        return self.root / spec["sha256"] / rid

    def spec(self, rid: Any) -> dict[str, Any]:
        if not isinstance(rid, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"resources.path(id): id must be a string, "
                                 f"not {type(rid).__name__}", field="id")
        spec = self.specs.get(rid)
        if spec is None:
            declared = ", ".join(repr(i) for i in self.specs) or "none"
            raise WorkbenchError("E_NOT_FOUND", f"resource {rid!r} is not declared in "
                                 f"manifest.json (declared: {declared})", id=rid,
                                 declared=list(self.specs))
        return spec

    def start_required(self) -> None:
        """R2: `"required": true` resources start downloading now, in the background."""
        for rid, spec in self.specs.items():
            if spec.get("required") is True and not self.target(rid).is_file():
                t = threading.Thread(target=self._quietly, args=(rid,), daemon=True,
                                     name=f"resource-{rid}")
                self._background.append(t)
                t.start()

    def _quietly(self, rid: str) -> None:
        try:
            self.path(rid)
        except WorkbenchError:
            pass  # kept in the slot: a path() waiting on this attempt reports it

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the downloads started at open (tests, notebooks)."""
        for t in self._background:
            t.join(timeout)

    def _slot(self, rid: str) -> _Slot:
        key = f"{self.specs[rid]['sha256']}/{rid}"
        with self._slots_lock:
            return self._slots.setdefault(key, _Slot())

    def path(self, rid: Any) -> str:
        target = self.target(rid)
        if target.is_file():  # R2: already here, return at once
            return str(target)
        slot = self._slot(rid)
        seen = slot.attempts
        with slot.lock:
            if target.is_file():
                return str(target)
            if slot.attempts != seen and slot.error is not None:
                raise slot.error  # the attempt we waited on failed: share its error (R5)
            try:
                self._download(rid, target)
            except WorkbenchError as exc:
                slot.error = exc
                raise
            finally:  # counted when done: a waiter that saw it running shares its outcome
                slot.attempts += 1
            slot.error = None
            return str(target)

    def _download(self, rid: str, target: Path) -> None:
        from ..providers.resources import FetchError

        spec = self.specs[rid]
        want = spec["sha256"]
        failures: list[dict[str, str]] = []
        target.parent.mkdir(parents=True, exist_ok=True)
        for address in self.source.addresses(spec):
            fd, tmp = tempfile.mkstemp(prefix=f".{rid}.", suffix=".part", dir=target.parent)
            digest = hashlib.sha256()
            try:
                with os.fdopen(fd, "wb") as f:
                    def write(chunk: bytes) -> None:
                        digest.update(chunk)
                        f.write(chunk)

                    self.source.fetch(address, spec, write)
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
        raise WorkbenchError("E_RESOURCE", f"resource {rid!r} could not be downloaded "
                             f"({self.source.kind}): {listed or 'no address to try'}",
                             id=rid, sha256=want, attempts=failures)


class Resources:
    """ctx.resources of one call."""

    def __init__(self, session: "CallSession") -> None:
        self.session = session

    def path(self, id: str) -> str:
        cache: ResourceCache | None = getattr(self.session.providers, "resources", None)
        if cache is None or not self.session.manifest.resources:
            raise WorkbenchError("E_NOT_FOUND", f"resource {id!r} is not declared in "
                                 "manifest.json (declared: none)", id=id, declared=[])
        return cache.path(id)


def make_cache(manifest: Any, *, state_dir: Path, source: str,
               mapping: Mapping[str, Any] | None) -> ResourceCache | None:
    """The bench's cache, or None when the manifest declares no resources (R1)."""
    from ..providers.resources import HttpSource, MockSource

    if not manifest.resources:
        return None
    root = state_dir / "resources"
    root.mkdir(parents=True, exist_ok=True)
    src: Source = MockSource(manifest.root, mapping) if source == "mock" else HttpSource()
    return ResourceCache(manifest.resources, root, src)
