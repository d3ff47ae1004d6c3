"""MCP Inspector's CLI (from npm, run by npx) against `gem-workbench mcp` over stdio and
`bench.serve_mcp()` over streamable HTTP (the token in the URL's query): another
implementation's client lists and calls the tools. Skipped only where `node` is absent, never in
CI (.ci/run installs Debian's nodejs and npm)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _mcp import EXE, env, mcp_gem
from conftest import GemBuilder

import workbench

pytestmark = [pytest.mark.deno, pytest.mark.xdist_group("inspector")]  # one npx download at a time

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
NPX = shutil.which("npx")

if NPX is None or shutil.which("node") is None:
    if os.environ.get("CI"):
        raise RuntimeError("node/npx are missing: .ci/run installs Debian's nodejs and npm")
    pytest.skip("needs node and npx (bash .ci/run installs Debian's nodejs and npm)", allow_module_level=True)


def inspector(*args: str, home: Path) -> Any:
    """The Inspector CLI's JSON answer."""
    assert NPX is not None
    out = subprocess.run(
        [NPX, "-y", INSPECTOR, "--cli", *args],
        capture_output=True,
        text=True,
        timeout=600,  # the first run downloads it
        env={**os.environ, **env(home)},
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_inspector_lists_and_calls_over_stdio(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)
    listed = inspector(EXE, "mcp", str(root), "--method", "tools/list", home=tmp_path / "home")
    assert [t["name"] for t in listed["tools"]][:2] == ["double", "count"]
    assert listed["tools"][0]["annotations"] == {"readOnlyHint": True}
    called = inspector(
        EXE, "mcp", str(root), "--method", "tools/call", "--tool-name", "double", "--tool-arg", "n=21",
        home=tmp_path / "home",
    )  # fmt: skip
    assert called["structuredContent"] == {"doubled": 42} and called["isError"] is False


def test_the_inspector_lists_and_calls_over_http(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], tmp_path: Path
) -> None:
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()
    try:
        url = f"{serving.url}?token={serving.token}"
        listed = inspector(url, "--transport", "http", "--method", "tools/list", home=tmp_path / "home")
        assert len(listed["tools"]) == 5
        called = inspector(
            url, "--transport", "http", "--method", "tools/call", "--tool-name", "double", "--tool-arg", "n=x",
            home=tmp_path / "home",
        )  # fmt: skip
        assert called["isError"] is True and called["structuredContent"]["error"]["code"] == "E_SCHEMA"
        assert bench.calls().iloc[-1].error == "E_SCHEMA"  # the client's call is the bench's
    finally:
        serving.stop()
