"""Where ctx.resources gets bytes from: plain fetching, no rules (those are in ctx/resources.py).

A source turns one address into bytes, handed to `write` chunk by chunk (never whole in
memory), or raises `FetchError` with a one-line reason:

    MockSource   the gem's `fixtures/resources/<id>` (which must resolve inside that folder:
                 SEC2), or a mapping given to `workbench.open(..., resources={id: bytes | path})`;
                 one address per resource
    HttpSource   an httpx GET: `url`, then each of `mirrors`, in that order; bounded by the
                 attempt's `deadline` in total (a watchdog cuts a server that drips bytes) and
                 by `max_bytes` (a larger Content-Length is refused before reading); every
                 hop's host resolved and each address checked by the bench's address rule
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

#: seconds: connecting, and waiting for each chunk of the body
CONNECT_TIMEOUT, READ_TIMEOUT = 10.0, 60.0
#: the total bound of a fetch given no deadline (the cache always gives one)
UNBOUNDED = 24 * 3600.0
_CHUNK = 1 << 20


class FetchError(Exception):
    """One address failed; str() is the reason shown to the tool (HTTP status, connection…)."""


class Source(Protocol):
    kind: str

    def addresses(self, spec: Mapping[str, Any]) -> list[str]: ...

    def fetch(
        self,
        address: str,
        spec: Mapping[str, Any],
        write: Callable[[bytes], None],
        *,
        deadline: float | None = None,
        max_bytes: int | None = None,
    ) -> None: ...


class MockSource:
    """Bytes from the gem's fixtures or from a mapping given at open; nothing from the network."""

    kind = "mock"

    def __init__(
        self, gem_root: Path, mapping: Mapping[str, bytes | str | os.PathLike[str]] | None = None
    ) -> None:
        self.gem_root = gem_root
        self.mapping = dict(mapping or {})

    def addresses(self, spec: Mapping[str, Any]) -> list[str]:
        rid = spec["id"]
        if rid in self.mapping:
            given = self.mapping[rid]
            return [f"mock:{rid}" if isinstance(given, (bytes, bytearray)) else str(Path(given))]
        return [str(self.gem_root / "fixtures" / "resources" / rid)]

    def fetch(
        self,
        address: str,
        spec: Mapping[str, Any],
        write: Callable[[bytes], None],
        *,
        deadline: float | None = None,
        max_bytes: int | None = None,
    ) -> None:
        rid = spec["id"]
        given = self.mapping.get(rid)
        if isinstance(given, (bytes, bytearray)):
            for i in range(0, len(given), _CHUNK):
                write(bytes(given[i : i + _CHUNK]))
            return
        path = Path(address)
        if given is None:  # the gem's own fixture: inside fixtures/resources/, links resolved
            folder = (self.gem_root / "fixtures" / "resources").resolve()
            if not path.resolve().is_relative_to(folder):
                raise FetchError(f"mock file {path} is outside the gem's fixtures/resources/ (SEC2)")
        if not path.is_file():
            where = (
                "the path given in resources="
                if given is not None
                else "no fixtures/resources/ file and no resources= entry for it"
            )
            raise FetchError(f"mock file not found: {path} ({where})")
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                write(chunk)


#: redirects a download follows (each hop resolved and checked again)
MAX_REDIRECTS = 20
_REDIRECTS = (301, 302, 303, 307, 308)
Guard = Callable[[str], "str | None"]


class HttpSource:
    """Real downloads: httpx GET, no cookies; timeouts on connect, on each read, and in total
    (`deadline`). Redirects are followed here, hop by hop, so that each hop's host is resolved
    and every address checked by `guard_for(url)` (the bench's address rule: a manifest's URL,
    or a redirect, to a loopback or private address is refused unless private_hosts= names it),
    and the connection goes to the address that was checked (httpreal.pinned)."""

    kind = "real"

    def __init__(
        self,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        guard_for: Callable[[str], Guard | None] | None = None,
    ) -> None:
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.guard_for = guard_for

    def addresses(self, spec: Mapping[str, Any]) -> list[str]:
        return [spec["url"], *spec.get("mirrors", ())]

    def fetch(
        self,
        address: str,
        spec: Mapping[str, Any],
        write: Callable[[bytes], None],
        *,
        deadline: float | None = None,
        max_bytes: int | None = None,
    ) -> None:
        import httpx

        from .httpreal import Watchdog, no_cookie_jar

        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise FetchError("timed out before it started")
        read = self.read_timeout if left is None else min(self.read_timeout, left)
        timeout = httpx.Timeout(read, connect=min(self.connect_timeout, read))
        dog = Watchdog(left if left is not None else UNBOUNDED)
        # no kept-alive connection: every socket (redirects too) is one the watchdog saw
        client = httpx.Client(
            follow_redirects=False,
            trust_env=False,
            cookies=no_cookie_jar(),
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        try:
            with dog, client:
                self._follow(client, address, spec, write, timeout, dog, max_bytes)
            if dog.fired:  # the body "ended" because the watchdog cut it
                raise FetchError("timed out (the attempt's total deadline)")
        except httpx.TimeoutException as exc:
            raise FetchError(f"timed out ({type(exc).__name__}: {exc or 'no detail'})") from None
        except httpx.ConnectError as exc:
            raise FetchError(f"connection error ({exc or 'no detail'})") from None
        except httpx.UnsupportedProtocol as exc:
            raise FetchError(f"unsupported address ({exc})") from None
        except httpx.HTTPError as exc:
            if dog.fired:
                raise FetchError("timed out (the attempt's total deadline)") from None
            raise FetchError(f"{type(exc).__name__}: {exc}") from None

    def _follow(
        self,
        client: Any,
        address: str,
        spec: Mapping[str, Any],
        write: Callable[[bytes], None],
        timeout: Any,
        dog: Any,
        max_bytes: int | None,
    ) -> None:
        """GET `address`, following redirects hop by hop, each hop's address checked."""
        from urllib.parse import urljoin

        from .._errors import WorkbenchError
        from .httpreal import pinned

        url = address
        for hop in range(MAX_REDIRECTS + 1):
            guard = self.guard_for(url) if self.guard_for is not None else None
            try:
                targets = pinned("GET", url, guard)
            except WorkbenchError as exc:
                where = f" (redirect {hop} of {address})" if hop else ""
                raise FetchError(f"{exc.message}{where}") from None
            location = _get(client, targets, timeout, dog, spec, write, max_bytes)
            if location is None:
                return
            url = urljoin(url, location)
        raise FetchError(f"more than {MAX_REDIRECTS} redirects")


def _get(
    client: Any,
    targets: list[Any],
    timeout: Any,
    dog: Any,
    spec: Mapping[str, Any],
    write: Callable[[bytes], None],
    max_bytes: int | None,
) -> str | None:
    """One GET to the first checked address that takes the connection: a redirect's Location,
    or None once the body was written."""
    import httpx

    for n, (target, host, pin) in enumerate(targets, 1):
        try:
            with client.stream(
                "GET", target, headers=host, timeout=timeout, extensions={"trace": dog.trace, **pin}
            ) as resp:
                location = resp.headers.get("location")
                if resp.status_code in _REDIRECTS and location:
                    return str(location)
                if resp.status_code != 200:
                    raise FetchError(f"HTTP {resp.status_code} {resp.reason_phrase}".rstrip())
                _body(resp, spec, write, max_bytes)
                return None
        except httpx.ConnectError:  # the next checked address, as create_connection does
            if n == len(targets) or dog.fired:
                raise
    return None


def _body(resp: Any, spec: Mapping[str, Any], write: Callable[[bytes], None], max_bytes: int | None) -> None:
    """The response's body to `write`, chunk by chunk; a declared size over the cap is refused
    before reading."""
    try:
        total = int(resp.headers.get("content-length") or 0) or None
    except ValueError:
        total = None
    if total is not None and max_bytes is not None and total > max_bytes:
        raise FetchError(
            f"Content-Length {total:,} is over {max_bytes:,} bytes, the cap of one resource (DOWNLOAD_BYTES)"
        )
    host = resp.request.headers.get("host") or resp.url.host
    with _progress(total, f"{spec['id']} ← {host}") as bar:
        for chunk in resp.iter_bytes(_CHUNK):
            write(chunk)
            bar.update(len(chunk))


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, n: int) -> None:
        pass


def in_notebook() -> bool:
    """Whether a Jupyter kernel runs us (the only place a progress bar is shown)."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "ipykernel" in sys.modules and hasattr(shell, "kernel")


def _progress(total: int | None, desc: str) -> Any:
    """A tqdm progress bar for downloads in notebooks (widget when ipywidgets works)."""
    if not in_notebook():
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False)
