"""`bench.serve_mcp()`: the open bench served over streamable HTTP from a background thread,
until `bench.stop_serving()` or the bench's close. Its calls are the bench's: they appear in
`bench.calls()` and the state views as they arrive, and wait for the notebook's (one lock)."""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._errors import UsageError, WorkbenchError

if TYPE_CHECKING:
    import uvicorn

    from ..bench.bench import Bench
    from ..bench.result import CallResult

START_SECONDS = 30.0  # for the server to listen (imports of the SDK and Starlette included)
STOP_SECONDS = 10.0
GRACE_SECONDS = 3.0  # for calls running to end before the server cuts its connections

_serving: dict[int, Serving] = {}  # id(bench) -> what serves it
_lock = threading.Lock()


@dataclass(eq=False)
class Serving:
    """A bench served over MCP: `url` and `token` are what a client needs (`headers` carries
    the token); `stop()` ends it (calls running finish first)."""

    url: str
    token: str
    address: tuple[str, int]
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _bench_id: int = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def __repr__(self) -> str:
        state = "serving" if self.running else "stopped"
        return f"<Serving MCP at {self.url} ({state}); token in .token, header in .headers>"

    def stop(self) -> None:
        """Stop serving: no new requests; the running call ends; the port is closed."""
        self._server.should_exit = True
        if threading.current_thread() is not self._thread:
            self._thread.join(GRACE_SECONDS)
            if self._thread.is_alive():  # a call that does not end: its connections are cut
                self._server.force_exit = True
                self._thread.join(STOP_SECONDS)
        with _lock:
            if _serving.get(self._bench_id) is self:
                del _serving[self._bench_id]


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (where a display reaches a notebook's cell)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def shown_in_this_cell() -> Callable[[CallResult], None]:
    """Shows a result in the cell running now, from any thread: the kernel routes a display by
    the parent header in the context, which is the serving cell's, captured here."""
    context = contextvars.copy_context()

    def show(res: CallResult) -> None:
        from IPython.display import display

        try:
            context.run(display, res)
        except Exception:  # noqa: BLE001  a display that fails must not fail the client's call
            pass

    return show


def serve(bench: Bench, *, port: int = 0, show: bool | None = None) -> Serving:
    """Serve `bench` over streamable HTTP on 127.0.0.1:`port` (0: a free one) in a background
    thread; stopped by `stop_serving(bench)` or the bench's close. `show`: display each client
    call's result in the calling cell as it arrives (None: when this runs in a Jupyter kernel)."""
    from .http import http_server, listen, url_of
    from .server import BenchServer

    bench.check_open()
    with _lock:
        now = _serving.get(id(bench))
        if now is not None and now.running:
            raise UsageError(f"this bench is served already at {now.url}: bench.stop_serving() first")
    sock = listen(port)
    try:
        shown = shown_in_this_cell() if (in_kernel() if show is None else show) else None
        server, token = http_server(BenchServer(bench, on_result=shown), sock)
    except BaseException:
        sock.close()
        raise
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # noqa: BLE001  said by serve(), which waits for the start
            failed.append(exc)
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"gem-workbench mcp {bench.manifest.id}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    host, bound = sock.getsockname()[:2]
    serving = Serving(url_of(sock), token, (host, bound), server, thread, id(bench))
    if not server.started:
        serving.stop()
        why = f": {failed[0]}" if failed else f" within {START_SECONDS:g} s"
        raise WorkbenchError("E_INTERNAL", f"the MCP server did not start{why}")
    with _lock:
        _serving[id(bench)] = serving
    bench.core.finalizers.append(serving.stop)  # closing the bench ends it
    return serving


def stop_serving(bench: Bench) -> bool:
    """Stop serving `bench`; whether it was served."""
    with _lock:
        serving = _serving.get(id(bench))
    if serving is None:
        return False
    serving.stop()
    return True


def serving_of(bench: Bench) -> Serving | None:
    """What serves `bench` now, if anything."""
    with _lock:
        serving = _serving.get(id(bench))
    return serving if serving is not None and serving.running else None


__all__ = ["Serving", "serve", "serving_of", "stop_serving"]
