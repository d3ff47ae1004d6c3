"""The Gem Workbench kernel's namespace: `workbench` is bound, `%load_ext workbench` is silent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from jupyter_client.manager import KernelManager

    tmp = tmp_path_factory.mktemp("kernel-ns")
    km = KernelManager(kernel_name="gem-workbench")
    km.start_kernel(
        env={**os.environ, "GEM_WORKBENCH_HOME": str(tmp / "home")},
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
    )
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _run(kc: Any, code: str) -> tuple[dict[str, Any], list[str]]:
    """Execute `code`; the reply's content and every text the cell showed (streams, results)."""
    shown: list[str] = []

    def output(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            shown.append(content["text"])
        elif msg["msg_type"] in ("execute_result", "display_data"):
            shown.append(content["data"].get("text/plain", ""))
        elif msg["msg_type"] == "error":
            shown.append("\n".join(content["traceback"]))

    reply = kc.execute_interactive(code, output_hook=output, timeout=60)
    return reply["content"], shown


def test_workbench_is_in_the_namespace_next_to_bench(kernel):
    content, shown = _run(kernel, "import sys; print(workbench is sys.modules['workbench'])")
    assert content["status"] == "ok", shown
    assert "".join(shown).strip() == "True"
    gem = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "notes"
    content, shown = _run(kernel, f"%gem open {gem}\nprint(type(bench).__name__, workbench.Bench.__name__)")
    assert content["status"] == "ok", shown
    assert shown[-1].strip() == "Bench Bench"
    _run(kernel, "%gem close")


def test_load_ext_workbench_again_prints_nothing(kernel):
    content, shown = _run(kernel, "import workbench\n%load_ext workbench")
    assert content["status"] == "ok"
    assert shown == [], f"a tutorial's first output would be: {shown}"


def test_load_ext_of_another_extension_still_works(kernel):
    content, shown = _run(kernel, "%load_ext no_such_extension_for_the_test")
    assert content["status"] == "error"
    assert "no_such_extension_for_the_test" in "".join(shown)
