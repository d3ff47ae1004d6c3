"""A PEP 517 backend of a few lines, so this folder installs offline with nothing but pip
(`pip install --no-deps --no-build-isolation --target DIR .`): the venv the tests run in has
setuptools but not `wheel`, which setuptools' bdist_wheel needs. It reads [project] and its
entry points from pyproject.toml and zips the package with its dist-info; a real plugin uses
setuptools, hatchling or flit instead (docs/platforms.md)."""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _dist(project: dict) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: dict) -> dict[str, str]:
    dist = _dist(project)
    groups = project.get("entry-points", {})
    entry_points = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()
    )
    return {
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
            f"Summary: {project.get('description', '')}\n"
        ),
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: wheelmaker\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}.dist-info/entry_points.txt": entry_points,
    }


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    for name, text in _metadata(project).items():
        path = Path(metadata_directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return f"{_dist(project)}.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    dist = _dist(project)
    files: dict[str, bytes] = {k: v.encode() for k, v in _metadata(project).items()}
    package = project["name"].replace("-", "_")
    for path in sorted((ROOT / package).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    record = f"{dist}.dist-info/RECORD"
    lines = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(data)}")
    files[record] = ("\n".join([*lines, f"{record},,"]) + "\n").encode()
    wheel = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel
