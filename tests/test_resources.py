"""ctx.resources (R1–R5), Python and JS tools, mock sources and real downloads from a local
HTTP server (pytest-httpserver on 127.0.0.1)."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

MODEL = b"\x00ocr model weights\x01" * 1000
MODEL_SHA = hashlib.sha256(MODEL).hexdigest()
OTHER = b"a different file"
OTHER_SHA = hashlib.sha256(OTHER).hexdigest()
# the test server listens on 127.0.0.1: real downloads reach it only when the bench names it
LOCAL = ["127.0.0.1", "localhost"]

PY_PATH = """
def handle(input, ctx):
    return ctx.resources.path(input["id"])
"""
JS_PATH = "export default async (input, ctx) => await ctx.resources.path(input.id);\n"

# the seed's example (ctx.resources), unmodified
SEED_EXAMPLE = """\
export default async function (input, ctx) {
  const modelPath = await ctx.resources.path('ocr-model')
  const model = await Deno.readFile(modelPath)
  // do something with model...
  return { ok: true }
}
"""


def res_gem(gem: GemBuilder, *resources: dict[str, Any], fixture: bytes | None = None) -> GemBuilder:
    gem.manifest["resources"] = list(resources)
    gem.tool("py_path", PY_PATH).tool("js_path", JS_PATH, ext="js")
    if fixture is not None:
        d = gem.root / "fixtures" / "resources"
        d.mkdir(parents=True, exist_ok=True)
        (d / resources[0]["id"]).write_bytes(fixture)
    return gem


def model(url: str = "https://example.invalid/ocr.bin", **kw: Any) -> dict[str, Any]:
    return {"id": "ocr-model", "url": url, "sha256": MODEL_SHA, **kw}


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- R1 ------------------------------------------------------------------------------------------
def test_R1_no_resources_declared_no_ctx_resources(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "py",
        """
        def handle(input, ctx):
            try:
                ctx.resources
            except AttributeError as e:
                return {"has": hasattr(ctx, "resources"), "msg": str(e)}
            return {"has": True}
        """,
    )
    gem.tool(
        "js",
        "export default async (i, ctx) => ({ t: typeof ctx.resources, has: 'resources' in ctx })",
        ext="js",
    )
    b = opened(gem)
    py = b.call("py").raise_for_error().value
    assert py["has"] is False and "declares no resources" in py["msg"]
    assert b.call("js").raise_for_error().value == {"t": "undefined", "has": False}
    assert b.providers.backends["resources"] is None


def test_R1_declared_resources_give_ctx_resources(gem: GemBuilder, opened: Callable) -> None:
    res_gem(gem, model(), fixture=MODEL)
    gem.tool("js", "export default async (i, ctx) => typeof ctx.resources.path", ext="js")
    b = opened(gem)
    assert b.call("js").raise_for_error().value == "function"
    assert b.call("py_path", {"id": "ocr-model"}).ok


# -- R2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tool", ["py_path", "js_path"])
def test_R2_mock_fixture_path_is_absolute_content_addressed(
    gem: GemBuilder, opened: Callable, tmp_path: Path, tool: str
) -> None:
    b = opened(res_gem(gem, model(), fixture=MODEL))
    p = b.call(tool, {"id": "ocr-model"}).raise_for_error().value
    assert os.path.isabs(p)
    assert Path(p) == tmp_path / "state" / "resources" / MODEL_SHA / "ocr-model"
    assert Path(p).read_bytes() == MODEL
    assert b.call(tool, {"id": "ocr-model"}).value == p
    res = b.call(tool, {"id": "ocr-model"})
    assert res.trace_rows[0]["method"] == "resources.path"


def test_R2_mock_mapping_given_to_open(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    f = tmp_path / "other.bin"
    f.write_bytes(OTHER)
    g = res_gem(gem, model(), {"id": "other", "url": "https://x.invalid/o", "sha256": OTHER_SHA})
    b = opened(g, resources={"ocr-model": MODEL, "other": f})
    assert Path(b.call("py_path", {"id": "ocr-model"}).value).read_bytes() == MODEL
    assert Path(b.call("py_path", {"id": "other"}).value).read_bytes() == OTHER


def test_R2_concurrent_calls_download_once(gem: GemBuilder, opened: Callable, httpserver: HTTPServer) -> None:
    hits = []

    def slow(request: Request) -> Response:
        hits.append(1)
        time.sleep(0.3)
        return Response(MODEL)

    httpserver.expect_request("/ocr.bin").respond_with_handler(slow)
    b = opened(res_gem(gem, model(httpserver.url_for("/ocr.bin"))), providers="real", private_hosts=LOCAL)
    cache = b.providers.backends["resources"]
    out: list[Any] = []

    def worker() -> None:
        try:
            out.append(cache.path("ocr-model"))
        except Exception as e:  # pragma: no cover - reported below
            out.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(set(out)) == 1 and isinstance(out[0], str), out
    assert len(hits) == 1


def test_R2_required_starts_download_at_open(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/ocr.bin").respond_with_data(MODEL)
    b = opened(
        res_gem(gem, model(httpserver.url_for("/ocr.bin"), required=True)),
        providers="real",
        private_hosts=LOCAL,
    )
    b.providers.backends["resources"].wait(10)
    assert len(httpserver.log) == 1  # before any tool asked for it
    p = b.call("js_path", {"id": "ocr-model"}).raise_for_error().value
    assert Path(p).read_bytes() == MODEL and len(httpserver.log) == 1


def test_R2_path_waits_for_the_required_download(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    def slow(request: Request) -> Response:
        time.sleep(0.5)
        return Response(MODEL)

    httpserver.expect_request("/ocr.bin").respond_with_handler(slow)
    b = opened(
        res_gem(gem, model(httpserver.url_for("/ocr.bin"), required=True)),
        providers="real",
        private_hosts=LOCAL,
    )
    p = b.call("py_path", {"id": "ocr-model"}).raise_for_error().value
    assert Path(p).read_bytes() == MODEL and len(httpserver.log) == 1


# -- R3 ------------------------------------------------------------------------------------------
def test_R3_hash_mismatch_names_both_hashes(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/ocr.bin").respond_with_data(OTHER)
    b = opened(res_gem(gem, model(httpserver.url_for("/ocr.bin"))), providers="real", private_hosts=LOCAL)
    err = b.call("py_path", {"id": "ocr-model"}).error
    assert err.code == "E_RESOURCE" and MODEL_SHA in err.message and OTHER_SHA in err.message
    assert err.details["attempts"][0]["address"] == httpserver.url_for("/ocr.bin")
    assert not (tmp_path / "state" / "resources" / MODEL_SHA / "ocr-model").exists()
    assert not list((tmp_path / "state" / "resources" / MODEL_SHA).iterdir())  # no temp left


def test_R3_changed_sha256_gives_a_new_path(tmp_path: Path, opened: Callable) -> None:
    g1 = res_gem(GemBuilder(tmp_path / "v1"), model(), fixture=MODEL)
    g2 = res_gem(GemBuilder(tmp_path / "v2"), {**model(), "sha256": OTHER_SHA}, fixture=OTHER)
    p1 = opened(g1).call("py_path", {"id": "ocr-model"}).raise_for_error().value
    p2 = opened(g2).call("py_path", {"id": "ocr-model"}).raise_for_error().value
    assert p1 != p2 and Path(p1).read_bytes() == MODEL and Path(p2).read_bytes() == OTHER


# -- R4 ------------------------------------------------------------------------------------------
def test_R4_cache_read_only_and_private_to_the_gem(tmp_path: Path, opened: Callable) -> None:
    other = res_gem(GemBuilder(tmp_path / "other"), model(), fixture=MODEL)
    other.manifest["id"] = "other.gem"
    other_path = (
        opened(other, state_dir=tmp_path / "other-state")
        .call("py_path", {"id": "ocr-model"})
        .raise_for_error()
        .value
    )

    g = res_gem(GemBuilder(tmp_path / "mine"), model(), fixture=MODEL)
    g.tool(
        "probe",
        """
        export default async (input, ctx) => {
          const p = await ctx.resources.path('ocr-model');
          const out = { size: (await Deno.readFile(p)).length };
          for (const [k, f] of [["write", () => Deno.writeFile(p, new Uint8Array([1]))],
                                ["other", () => Deno.readFile(input.other)]]) {
            try { await f(); out[k] = "allowed"; } catch (e) { out[k] = e.name; }
          }
          return out;
        }
        """,
        ext="js",
    )
    b = opened(g)
    out = b.call("probe", {"other": other_path}).raise_for_error().value
    assert out == {"size": len(MODEL), "write": "NotCapable", "other": "NotCapable"}
    mine = Path(b.call("py_path", {"id": "ocr-model"}).value)
    assert stat.S_IMODE(mine.stat().st_mode) & 0o222 == 0
    assert mine.read_bytes() == MODEL


# -- R5 ------------------------------------------------------------------------------------------
def test_R5_mirror_fallback(gem: GemBuilder, opened: Callable, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/mirror.bin").respond_with_data(MODEL)
    spec = model(httpserver.url_for("/gone.bin"), mirrors=[httpserver.url_for("/mirror.bin")])
    b = opened(res_gem(gem, spec), providers="real", private_hosts=LOCAL)
    p = b.call("js_path", {"id": "ocr-model"}).raise_for_error().value
    assert Path(p).read_bytes() == MODEL


@pytest.mark.parametrize("tool", ["py_path", "js_path"])
def test_R5_every_address_reason_then_retry(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer, tool: str
) -> None:
    httpserver.expect_oneshot_request("/missing.bin").respond_with_data("gone", status=404)
    httpserver.expect_request("/bad.bin").respond_with_data(OTHER)
    refused = f"http://127.0.0.1:{closed_port()}/ocr.bin"
    spec = model(httpserver.url_for("/missing.bin"), mirrors=[httpserver.url_for("/bad.bin"), refused])
    b = opened(res_gem(gem, spec), providers="real", private_hosts=LOCAL)
    err = b.call(tool, {"id": "ocr-model"}).error
    assert err.code == "E_RESOURCE", err
    assert f"{spec['url']}: HTTP 404" in err.message
    assert f"expected {MODEL_SHA}, got {OTHER_SHA}" in err.message
    assert "connection error" in err.message and refused in err.message
    if tool == "py_path":
        assert [a["address"] for a in err.details["attempts"]] == [spec["url"], *spec["mirrors"]]
    # the server is fixed: the next call tries again and succeeds
    httpserver.expect_request("/missing.bin").respond_with_data(MODEL)
    assert b.call(tool, {"id": "ocr-model"}).ok


def test_R5_404_reason(gem: GemBuilder, opened: Callable, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/nf.bin").respond_with_data("no", status=404)
    b = opened(res_gem(gem, model(httpserver.url_for("/nf.bin"))), providers="real", private_hosts=LOCAL)
    err = b.call("py_path", {"id": "ocr-model"}).error
    assert err.code == "E_RESOURCE" and "HTTP 404" in err.message


def test_R5_undeclared_id_names_declared_ids(gem: GemBuilder, opened: Callable) -> None:
    b = opened(res_gem(gem, model(), fixture=MODEL))
    for tool in ("py_path", "js_path"):
        err = b.call(tool, {"id": "nope"}).error
        assert err.code == "E_NOT_FOUND" and "'ocr-model'" in err.message and "nope" in err.message


def test_R5_missing_mock_fixture_is_E_RESOURCE(gem: GemBuilder, opened: Callable) -> None:
    b = opened(res_gem(gem, model()))
    err = b.call("py_path", {"id": "ocr-model"}).error
    assert err.code == "E_RESOURCE" and "fixtures/resources" in err.message


# -- the seed's example --------------------------------------------------------------------------
def test_seed_resources_example_runs_unmodified(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/ocr.bin").respond_with_data(MODEL)
    res_gem(gem, model(httpserver.url_for("/ocr.bin")))
    gem.tool("seed", SEED_EXAMPLE, ext="js")
    b = opened(gem, providers="real", private_hosts=LOCAL)
    assert b.call("seed").raise_for_error().value == {"ok": True}
    b2 = opened(gem.write(), state_dir=gem.root.parent / "mock-state", resources={"ocr-model": MODEL})
    assert b2.call("seed").raise_for_error().value == {"ok": True}


def test_R2_progress_bar_in_notebooks(
    gem: GemBuilder,
    opened: Callable,
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import workbench.providers.resources as source

    monkeypatch.setattr(source, "in_notebook", lambda: True)
    httpserver.expect_request("/ocr.bin").respond_with_data(MODEL)
    b = opened(res_gem(gem, model(httpserver.url_for("/ocr.bin"))), providers="real", private_hosts=LOCAL)
    res = b.call("py_path", {"id": "ocr-model"})
    assert res.ok
    # tqdm.auto: a widget in Jupyter, a text bar on stderr elsewhere (here: the tool's logs)
    assert "ocr-model" in capsys.readouterr().err + str(res.logs)


def test_R2_cached_path_returns_at_once_without_downloading(
    gem: GemBuilder, opened: Callable, httpserver: Any
) -> None:
    """Once on the machine, path() answers from the cache (its speed: tests/bench/)."""
    httpserver.expect_request("/ocr.bin").respond_with_data(MODEL)
    b = opened(res_gem(gem, model(httpserver.url_for("/ocr.bin"))), providers="real", private_hosts=LOCAL)
    cache = b.providers.backends["resources"]
    first = cache.path("ocr-model")
    assert all(cache.path("ocr-model") == first for _ in range(50))
    assert len(httpserver.log) == 1
