"""Where ctx.resources gets bytes from: plain fetching, no rules (those are in ctx/resources.py).

A source turns one address into bytes or raises `FetchError` with a one-line reason:

    MockSource   the gem's `fixtures/resources/<id>`, or a mapping given to
                 `workbench.open(..., resources={id: bytes | path})`; one address per resource
    HttpSource   an httpx GET with timeouts: `url`, then each of `mirrors`, in that order
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

#: seconds: connecting, and waiting for each chunk of the body
CONNECT_TIMEOUT, READ_TIMEOUT = 10.0, 60.0
_CHUNK = 1 << 20


class FetchError(Exception):
    """One address failed; str() is the reason shown to the tool (HTTP status, connection…)."""


class Source(Protocol):
    kind: str

    def addresses(self, spec: Mapping[str, Any]) -> list[str]: ...

    def fetch(self, address: str, spec: Mapping[str, Any],
              write: Callable[[bytes], None]) -> None: ...


class MockSource:
    """Bytes from the gem's fixtures or from a mapping given at open; nothing from the network."""

    kind = "mock"

    def __init__(self, gem_root: Path, mapping: Mapping[str, "bytes | str | os.PathLike[str]"]
                 | None = None) -> None:
        self.gem_root = gem_root
        self.mapping = dict(mapping or {})

    def addresses(self, spec: Mapping[str, Any]) -> list[str]:
        rid = spec["id"]
        if rid in self.mapping:
            given = self.mapping[rid]
            return [f"mock:{rid}" if isinstance(given, (bytes, bytearray)) else str(Path(given))]
        return [str(self.gem_root / "fixtures" / "resources" / rid)]

    def fetch(self, address: str, spec: Mapping[str, Any], write: Callable[[bytes], None]) -> None:
        rid = spec["id"]
        given = self.mapping.get(rid)
        if isinstance(given, (bytes, bytearray)):
            write(bytes(given))
            return
        path = Path(address)
        if not path.is_file():
            where = ("the path given in resources=" if given is not None else
                     "no fixtures/resources/ file and no resources= entry for it")
            raise FetchError(f"mock file not found: {path} ({where})")
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                write(chunk)


class HttpSource:
    """Real downloads: httpx GET, redirects followed, timeouts on connect and on each read."""

    kind = "real"

    def __init__(self, connect_timeout: float = CONNECT_TIMEOUT,
                 read_timeout: float = READ_TIMEOUT) -> None:
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout

    def addresses(self, spec: Mapping[str, Any]) -> list[str]:
        return [spec["url"], *spec.get("mirrors", ())]

    def fetch(self, address: str, spec: Mapping[str, Any], write: Callable[[bytes], None]) -> None:
        import httpx

        timeout = httpx.Timeout(self.read_timeout, connect=self.connect_timeout)
        try:
            with httpx.stream("GET", address, timeout=timeout, follow_redirects=True) as resp:
                if resp.status_code != 200:
                    raise FetchError(f"HTTP {resp.status_code} {resp.reason_phrase}".rstrip())
                total = int(resp.headers.get("content-length") or 0) or None
                with _progress(total, f"{spec['id']} ← {resp.url.host}") as bar:
                    for chunk in resp.iter_bytes(_CHUNK):
                        write(chunk)
                        bar.update(len(chunk))
        except httpx.TimeoutException as exc:
            raise FetchError(f"timed out ({type(exc).__name__}: {exc or 'no detail'})") from None
        except httpx.ConnectError as exc:
            raise FetchError(f"connection error ({exc or 'no detail'})") from None
        except httpx.UnsupportedProtocol as exc:
            raise FetchError(f"unsupported address ({exc})") from None
        except httpx.HTTPError as exc:
            raise FetchError(f"{type(exc).__name__}: {exc}") from None


class _NoBar:
    def __enter__(self) -> "_NoBar":
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
