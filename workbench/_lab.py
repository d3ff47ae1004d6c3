"""`gem-workbench lab`: JupyterLab on a folder, with the Gem Workbench kernel as the default."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._kernelspec import NAME


def command(root: Path, *, ip: str, port: int | None, browser: bool, extra: Sequence[str] = ()) -> list[str]:
    """The `jupyter lab` command line (as root it needs --allow-root)."""
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={root}",
        f"--MappingKernelManager.default_kernel_name={NAME}",
        f"--ServerApp.ip={ip}",
    ]
    if port is not None:  # the port asked for, or fail: never a different one silently
        cmd += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not browser:
        cmd.append("--ServerApp.open_browser=False")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return [*cmd, *extra]


#: a Jupyter config folder of ours: labconfig/page_config.json disables the announcements plugin
#: (the news prompt on every first start, and its fetches of news and update checks)
LAB_CONFIG = Path(__file__).resolve().parent / "_labconfig"


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment JupyterLab runs in: `base` (os.environ) with LAB_CONFIG on
    JUPYTER_CONFIG_PATH, after the folders already there. The user's JUPYTER_CONFIG_DIR is
    read before the whole path, so a user who enables the plugin there still gets it."""
    env = dict(os.environ if base is None else base)
    path = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([*path, str(LAB_CONFIG)])
    return env


def _server_info(pid: int) -> dict[str, Any] | None:
    from jupyter_core.paths import jupyter_runtime_dir

    info = Path(jupyter_runtime_dir()) / f"jpserver-{pid}.json"
    try:
        data: dict[str, Any] = json.loads(info.read_text())
        return data
    except (OSError, ValueError):  # not written yet, or half-written
        return None


def _listening(info: dict[str, Any]) -> bool:
    """Jupyter writes its server info file before its event loop binds the port: a URL
    printed on the file alone could be refused (seen once in a test run)."""
    import socket

    host = info.get("hostname") or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    try:
        with socket.create_connection((host, int(info["port"])), timeout=1):
            return True
    except (OSError, KeyError, TypeError, ValueError):
        return False


def run(
    path: str,
    *,
    ip: str = "127.0.0.1",
    port: int | None = None,
    browser: bool = True,
    extra: Sequence[str] = (),
) -> int:
    """Run JupyterLab on `path` until it exits or is interrupted; print its URL once ready."""
    from jupyter_client.kernelspec import KernelSpecManager

    root = Path(path)
    if not root.is_dir():
        print(f"error: {root} is not a folder", file=sys.stderr)
        return 1
    if NAME not in KernelSpecManager().find_kernel_specs():
        print(
            f"warning: no '{NAME}' kernelspec found; run `gem-workbench kernel install --sys-prefix`",
            file=sys.stderr,
        )
    proc = subprocess.Popen(
        command(root.resolve(), ip=ip, port=port, browser=browser, extra=extra), env=environment()
    )

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # so `finally` stops Jupyter too
    try:
        while proc.poll() is None:
            info = _server_info(proc.pid)
            if info is not None and _listening(info):
                url = f"{info['url']}lab"
                if info.get("token"):
                    url += f"?token={info['token']}"
                print(f"Gem Workbench Lab on {root}: {url}", flush=True)
                break
            time.sleep(0.1)
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:  # SIGTERM: Jupyter shuts its kernels down cleanly
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
