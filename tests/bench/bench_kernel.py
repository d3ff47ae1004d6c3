"""Kernel start: the Gem Workbench kernel vs the plain python3 kernel, to the first cell result."""

from __future__ import annotations

import os
import tempfile

from benchlib import Figures, Sizes, paired_median_ns


def _first_result(kernel_name: str) -> None:
    """Start a kernel, run `1+1`, wait for the reply, shut it down."""
    from jupyter_client.manager import start_new_kernel

    # (log level: ipykernel warns on every start that it "is running over TCP without encryption")
    km, kc = start_new_kernel(
        kernel_name=kernel_name, startup_timeout=60, extra_arguments=["--Application.log_level=ERROR"]
    )
    try:
        reply = kc.execute_interactive("1+1", timeout=60, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def bench_kernel_start(sizes: Sizes) -> Figures:
    """Median time from start to the first cell's result, both kernels started alternately."""
    with tempfile.TemporaryDirectory() as home:
        old = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = home  # no user profile or startup files in the measurement
        try:
            wb, py = paired_median_ns(
                lambda: _first_result("gem-workbench"),
                lambda: _first_result("python3"),
                1 if sizes.smoke else max(3, sizes.imports),
            )
        finally:
            if old is None:
                os.environ.pop("IPYTHONDIR")
            else:
                os.environ["IPYTHONDIR"] = old
    return {"workbench_ms": wb / 1e6, "python3_ms": py / 1e6, "ratio": wb / py}
