"""The Gem Workbench kernelspec: where its files are, and installing it for another Jupyter.

`pip install` already puts it in the environment (hatch shared-data:
share/jupyter/kernels/gem-workbench, argv `python -m workbench.kernel`). `install()` is for a
Jupyter running elsewhere (another venv, the user's or system-wide Jupyter): its kernel.json
names this environment's interpreter by absolute path, so that Jupyter starts the kernel here.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

NAME = "gem-workbench"
DISPLAY_NAME = "Gem Workbench"
LOGOS = ("logo-32x32.png", "logo-64x64.png")


def source_dir() -> Path | None:
    """The kernelspec folder shipped with the package: the checkout's, else the installed one."""
    checkout = Path(__file__).resolve().parent.parent / "extension" / "kernelspec"
    installed = Path(sys.prefix) / "share" / "jupyter" / "kernels" / NAME
    for folder in (checkout, installed):
        if (folder / "kernel.json").is_file():
            return folder
    return None


def spec(display_name: str = DISPLAY_NAME, python: str = "python") -> dict[str, object]:
    """kernel.json's content. `python` is replaced by Jupyter with its own interpreter."""
    return {
        "argv": [python, "-m", "workbench.kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "metadata": {"debugger": True},
        "kernel_protocol_version": "5.5",
    }


def install(
    *, name: str = NAME, display_name: str = DISPLAY_NAME, user: bool = False, prefix: str | None = None
) -> Path:
    """Install the kernelspec as `name` (user, prefix, or system-wide); return its folder.

    Raises ValueError for a name Jupyter does not accept (lowercase letters, digits, `.-_`).
    """
    from jupyter_client.kernelspec import KernelSpecManager

    # Built in a temporary folder: installing replaces the target folder, which may well be
    # the very folder we would otherwise copy from (the environment's own kernelspec).
    with tempfile.TemporaryDirectory(prefix="gem-workbench-kernelspec-") as tmp:
        folder = Path(tmp) / name
        folder.mkdir()
        shipped = source_dir()
        for logo in LOGOS:
            if shipped is not None and (shipped / logo).is_file():
                shutil.copyfile(shipped / logo, folder / logo)
        data = spec(display_name, python=sys.executable)
        (folder / "kernel.json").write_text(json.dumps(data, indent=1) + "\n")
        dest = KernelSpecManager().install_kernel_spec(
            str(folder), kernel_name=name, user=user, prefix=prefix
        )
    return Path(dest)
