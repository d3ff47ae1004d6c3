"""Adversarial tests of ctx.resources (SEC2, SEC5, R2, R5): manifest data that would lead
outside the cache, downloads that never end or never stop growing, and a tool's wait bounded
by its call's time. Manifests with unsafe ids are built past the loader's own check (the
loader refuses them; the cache must hold on its own). Real downloads come from servers on
127.0.0.1 only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import workbench.ctx.resources as resources_rules
from workbench.platforms import load as load_manifest
from workbench.platforms import notochord

DATA = b"resource bytes " * 500
DATA_SHA = hashlib.sha256(DATA).hexdigest()
# the test server listens on 127.0.0.1: real downloads reach it only when the bench names it
LOCAL = ["127.0.0.1", "localhost"]
MiB = 1024 * 1024

PY_PATH = """
def handle(input, ctx):
    return ctx.resources.path(input["id"])
"""
JS_PATH = "export default async (input, ctx) => await ctx.resources.path(input.id);\n"


def res_gem(gem: GemBuilder, *resources: dict[str, Any]) -> GemBuilder:
    gem.manifest["resources"] = list(resources)
    gem.tool("py_path", PY_PATH).tool("js_path", JS_PATH, ext="js")
    return gem


def past_the_loader(monkeypatch: pytest.MonkeyPatch, gem: GemBuilder, *resources: dict[str, Any]) -> None:
    """open() gets a manifest whose resources the loader never saw (as if its check had a hole)."""
    res_gem(gem, {"id": "placeholder", "url": "https://x.invalid/", "sha256": DATA_SHA})
    real = load_manifest(gem.write())
    monkeypatch.setattr(
        notochord,
        "PROFILE",
        dataclasses.replace(
            notochord.PROFILE, load=lambda path: dataclasses.replace(real, resources=tuple(resources))
        ),
    )


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


ESCAPES = ["./../../../escape.txt", "../../../escape.txt", "sub/../../../../escape.txt"]


@pytest.mark.parametrize("rid", ESCAPES)
def test_SEC2_resource_id_never_writes_outside_the_cache_mock(
    gem: GemBuilder, opened: Callable, tmp_path: Path, rid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    past_the_loader(
        monkeypatch, gem, {"id": rid, "url": "https://x.invalid/r", "sha256": DATA_SHA, "required": True}
    )
    before = files_under(tmp_path)
    b = opened(gem, resources={rid: DATA})  # "required": the download would start at open
    b.providers.backends["resources"].wait(10)
    err = b.call("py_path", {"id": rid}).error
    assert err is not None and err.code == "E_MANIFEST" and "safe file name" in err.message
    b.providers.backends["resources"].wait(10)
    new = files_under(tmp_path) - before
    cache = (tmp_path / "state" / "resources").resolve()
    outside = [p for p in new if not p.resolve().is_relative_to(tmp_path / "state")]
    assert outside == [] and not any(p.resolve().is_relative_to(cache) for p in new)
    assert not list(tmp_path.parent.glob("escape.txt*")) and not list(tmp_path.glob("escape.txt*"))


def test_SEC2_resource_id_never_writes_outside_the_cache_real(
    gem: GemBuilder,
    opened: Callable,
    tmp_path: Path,
    lang: str,
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    httpserver.expect_request("/r").respond_with_data(DATA)
    rid = ESCAPES[0]
    past_the_loader(
        monkeypatch, gem, {"id": rid, "url": httpserver.url_for("/r"), "sha256": DATA_SHA, "required": True}
    )
    b = opened(gem, providers="real", private_hosts=LOCAL)
    b.providers.backends["resources"].wait(10)
    res = b.call(f"{lang}_path", {"id": rid})
    assert res.error is not None and res.error.code == "E_MANIFEST"
    assert len(httpserver.log) == 0  # nothing was even downloaded
    assert not list(tmp_path.parent.glob("escape.txt*")) and not list(tmp_path.glob("escape.txt*"))


@pytest.mark.parametrize("sha", ["../../sha-escape", DATA_SHA.upper(), DATA_SHA + "\n", "/tmp/x"])
def test_SEC2_sha256_must_be_64_hex_digits(
    gem: GemBuilder, opened: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha: str
) -> None:
    past_the_loader(
        monkeypatch, gem, {"id": "model", "url": "https://x.invalid/r", "sha256": sha, "required": True}
    )
    before = files_under(tmp_path)
    b = opened(gem, resources={"model": DATA})
    b.providers.backends["resources"].wait(10)
    err = b.call("py_path", {"id": "model"}).error
    assert err.code == "E_MANIFEST" and "sha256" in err.message
    assert files_under(tmp_path) - before == set() or all(
        "state" in p.relative_to(tmp_path).parts[0] for p in files_under(tmp_path) - before
    )
    assert not (tmp_path / "sha-escape").exists()
    assert [p.name for p in (tmp_path / "state" / "resources").iterdir()] == []


def test_SEC2_fixture_symlink_out_of_the_gem_is_not_followed(
    gem: GemBuilder, opened: Callable, tmp_path: Path, lang: str
) -> None:
    """A gem's fixture link to a user file would copy it into the cache its sandbox reads."""
    secret = tmp_path / "user-secret.txt"
    secret.write_bytes(DATA)
    res_gem(gem, {"id": "model", "url": "https://x.invalid/r", "sha256": DATA_SHA})
    b = opened(gem)
    folder = gem.root / "fixtures" / "resources"  # planted after open: the loader never saw it
    folder.mkdir(parents=True)
    (folder / "model").symlink_to(secret)
    res = b.call(f"{lang}_path", {"id": "model"})
    assert res.error is not None
    if lang == "js":  # the sandbox refuses the call first: a link out of the gem folder (N1)
        assert res.error.code == "E_SANDBOX" and res.error.details["path"].endswith("model")
    else:
        assert res.error.code == "E_RESOURCE"
        assert "outside the gem's fixtures/resources/" in res.error.message
    assert not list((tmp_path / "state" / "resources").rglob("model"))


def test_SEC2_planted_symlink_in_the_cache_is_not_followed(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "state" / "resources"
    root.mkdir(parents=True)
    (root / DATA_SHA).symlink_to(elsewhere)
    b = opened(
        res_gem(gem, {"id": "model", "url": "https://x.invalid/r", "sha256": DATA_SHA}),
        resources={"model": DATA},
    )
    err = b.call("py_path", {"id": "model"}).error
    assert err.code == "E_PATH" and "outside" in err.message
    assert list(elsewhere.iterdir()) == []


def test_SEC2_fixture_with_a_trailing_newline_id_is_refused(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$` would let "model\\n" through; the rule is anchored with fullmatch."""
    past_the_loader(monkeypatch, gem, {"id": "model\n", "url": "https://x.invalid/r", "sha256": DATA_SHA})
    b = opened(gem, resources={"model\n": DATA})
    assert b.call("py_path", {"id": "model\n"}).error.code == "E_MANIFEST"


# == SEC5: downloads bounded in time and size, streamed to a temp file in the cache ==============
# No stopwatch: each server says whether it sent everything by the time the call returned (a
# download cut by its bound returns while the server is still sending), and the ctx call's own
# error says which bound stopped it.
class _Drip:
    """Send `data` in pieces, one every `every` s, over `seconds` s (no per-read timeout fires
    on it); `finished` is set once the last piece went out, before the body ends."""

    def __init__(self, data: bytes, seconds: float, every: float = 0.4) -> None:
        self.data, self.every = data, every
        self.pieces = max(1, round(seconds / every))
        self.finished = threading.Event()

    def __call__(self, req: Request) -> Response:
        step = -(-len(self.data) // self.pieces)

        def body() -> Iterator[bytes]:
            for i in range(0, len(self.data), step):
                yield self.data[i : i + step]
                time.sleep(self.every)
            self.finished.set()

        return Response(body(), content_type="application/octet-stream")


def test_SEC5_resource_download_has_a_total_deadline(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 20 s drip against a 1 s DOWNLOAD_SECONDS (the call has its default 30 s): without a
    total deadline it is read to its end and its file returned."""
    monkeypatch.setattr(resources_rules, "DOWNLOAD_SECONDS", 1.0)
    drip = _Drip(DATA, 20.0)
    httpserver.expect_request("/slow").respond_with_handler(drip)
    httpserver.expect_request("/mirror").respond_with_data(DATA)
    b = opened(
        res_gem(
            gem,
            {
                "id": "model",
                "url": httpserver.url_for("/slow"),
                "sha256": DATA_SHA,
                "mirrors": [httpserver.url_for("/mirror")],
            },
        ),
        providers="real",
        private_hosts=LOCAL,
    )
    err = b.call("py_path", {"id": "model"}).error
    whole = drip.finished.is_set()  # read as the call returns
    assert err is not None and err.code == "E_RESOURCE", err
    assert "timed out" in err.message and "DOWNLOAD_SECONDS" in err.message
    assert not whole, "the download read the whole 20 s drip: no total deadline cut it"
    # one deadline for the whole attempt: the mirror was not tried with fresh time
    assert [a["reason"] for a in err.details["attempts"]][1:] == [
        "not tried: the attempt's 1 s (DOWNLOAD_SECONDS) were used up"
    ], err.details
    assert "/mirror" not in [req.path for req, _ in httpserver.log]
    assert not [p for p in b.providers.backends["resources"].root.rglob("*") if p.is_file()]


class _Endless:
    """300 MB, chunked (no Content-Length); `finished` is set once the last chunk went out."""

    def __init__(self) -> None:
        self.finished = threading.Event()

    def __call__(self, req: Request) -> Response:
        chunk = b"q" * (256 * 1024)

        def body() -> Iterator[bytes]:
            for _ in range(1200):
                yield chunk
            self.finished.set()

        return Response(body(), content_type="application/octet-stream")


def test_SEC5_resource_download_size_cap(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resources_rules, "DOWNLOAD_BYTES", 1 * MiB)
    endless = _Endless()
    httpserver.expect_request("/big").respond_with_handler(endless)  # 300 MB, chunked
    httpserver.expect_request("/declared").respond_with_handler(
        lambda req: Response((b"q" for _ in range(1)), headers={"Content-Length": str(300 * MiB)})
    )
    b = opened(
        res_gem(
            gem,
            {
                "id": "model",
                "url": httpserver.url_for("/big"),
                "sha256": DATA_SHA,
                "mirrors": [httpserver.url_for("/declared")],
            },
        ),
        providers="real",
        private_hosts=LOCAL,
    )
    tracemalloc.start()
    try:
        err = b.call("py_path", {"id": "model"}).error
        whole = endless.finished.is_set()  # read as the call returns
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err is not None and err.code == "E_RESOURCE", err
    assert f"larger than {MiB:,} bytes" in err.message and "DOWNLOAD_BYTES" in err.message
    assert not whole, "the download read all 300 MB before refusing it"
    # the mirror is refused on its Content-Length, its body not read
    assert "Content-Length 314,572,800" in err.message
    assert peak < 30 * MiB, peak / MiB
    assert not [p for p in b.providers.backends["resources"].root.rglob("*") if p.is_file()]


def test_SEC5_resources_path_waits_only_for_the_calls_time(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """The call has 2 s; the download takes ~4 s: E_TIMEOUT at 2 s, the file arrives later.
    The proof is resources.path's own E_TIMEOUT (in the call's trace): it is raised only when
    its wait for the download ended with the download still running. Left to wait for the
    download, path() would return the file (a JS call is also stopped as a whole at its
    deadline, E_TIMEOUT either way: only the ctx call's own code tells)."""
    httpserver.expect_request("/slow").respond_with_handler(_Drip(DATA, 4.0))
    b = opened(
        res_gem(gem, {"id": "model", "url": httpserver.url_for("/slow"), "sha256": DATA_SHA}),
        providers="real",
        private_hosts=LOCAL,
        timeout=2.0,
    )
    if lang == "js":
        b.call("js_path", {"id": "nope"})  # start the sandbox outside the timed call
    res = b.call(f"{lang}_path", {"id": "model"})
    assert res.error is not None and res.error.code == "E_TIMEOUT", res
    (row,) = [r for r in res.trace_rows if r["method"] == "resources.path"]
    assert row["error"] == "E_TIMEOUT", res.trace_rows
    if lang == "py":  # the ctx call's error is the tool's
        assert "waiting for the download" in res.error.message, res.error
    # the download went on in the background; with it done, the next call answers at once
    b.providers.backends["resources"].wait(10)
    p = b.call(f"{lang}_path", {"id": "model"}).raise_for_error().value
    assert Path(p).read_bytes() == DATA and len(httpserver.log) == 1


def test_R2_download_streams_into_a_temp_file_inside_the_cache(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/slow").respond_with_handler(_Drip(DATA, 2.0, every=0.1))
    b = opened(
        res_gem(
            gem, {"id": "model", "url": httpserver.url_for("/slow"), "sha256": DATA_SHA, "required": True}
        ),
        providers="real",
        private_hosts=LOCAL,
    )
    folder = b.providers.backends["resources"].root / DATA_SHA
    seen: set[str] = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (folder / "model").exists():
        seen |= {p.name for p in folder.glob(".model.*.part")} if folder.is_dir() else set()
        time.sleep(0.05)
    assert seen, "no partial file seen in the cache while downloading"
    b.providers.backends["resources"].wait(10)
    assert (folder / "model").read_bytes() == DATA
    assert sorted(os.listdir(folder)) == ["model"]  # the temp file became the file
