"""Shared by the tests/test_deno_*.py files: a Deno home out of ~, process checks (benches come
from conftest's `opened`)."""

from __future__ import annotations

import contextlib
import http.server
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

OK = "export default async () => 'ok'"


@pytest.fixture(scope="module", autouse=True)
def deno_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # mock benches keep DENO_DIR under $GEM_WORKBENCH_HOME: keep it out of the user's home
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEM_WORKBENCH_HOME", str(tmp_path_factory.mktemp("home")))
        yield


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def deno_pids(gem_root: Path) -> list[int]:
    """Processes running the sandbox host for this gem (its folder is on their command line)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"host.ts") for a in args) and str(gem_root).encode() in args:
            found.append(int(d.name))
    return found


class Server:
    """An HTTP server on 127.0.0.1 that records every connection and request it gets."""

    def __init__(self) -> None:
        seen = self.connections, self.requests = [], []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen[1].append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"secret")

            def log_message(self, *args: Any) -> None:
                pass

        class Recording(http.server.ThreadingHTTPServer):
            def verify_request(self, request: Any, client_address: Any) -> bool:
                seen[0].append(client_address)
                return True

        self.httpd = Recording(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        s.stop()


Where = Callable[[Any, str, Any], bool]


@contextlib.contextmanager
def interrupted(where: Where) -> Iterator[None]:
    """The block raises KeyboardInterrupt, at the first profile event `where` accepts (a hook
    that raises is unset: one Ctrl-C per hook)."""
    seen = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if where(frame, event, arg):
            seen.append(event)
            raise KeyboardInterrupt

    sys.setprofile(hook)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        sys.setprofile(None)
    assert seen, "the Ctrl-C never came"


# The debugger tests' TS tool (inspector, panel, browser): its TS lines and its JS's differ (the
# interface and the type annotations are erased), so a breakpoint goes through the source map
ADD = """\
    // a tool to step through
    interface Input {
      a: number;
      b: number;
    }

    export default async function add(input: Input, ctx: unknown): Promise<{ sum: number }> {
      const doubled: number = input.a * 2;
      const sum: number = doubled + input.b;
      return { sum };
    }
    """
