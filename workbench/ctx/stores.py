"""The stores a bench sits on: opening them, where real state lives, seeding the mock folder.

The ctx layer is the Face's one door to storage (pyproject.toml's contract "The Face reaches
providers through the ctx layer only"): `workbench.open`, the bench, its views and the
checkers name the provider types and functions they need from here, never from
`workbench.providers`, so which provider backs a capability stays the ctx layer's business.
The names re-exported below are the providers' own (one definition each); what this module
adds is `seed_files`, the mock conversation folder's start from a folder on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..providers import (
    DataStore,
    Providers,
    SqlDatabase,
    StateError,
    default_state_dir,
    make_providers,
    make_state_dir,
)
from ..providers.base import FileStore
from ..providers.folder import read_regular
from ..providers.httpcassette import Served
from ..providers.mail import Envelope

__all__ = [
    "DataStore",
    "Envelope",
    "FileStore",
    "Providers",
    "Served",
    "SqlDatabase",
    "StateError",
    "default_state_dir",
    "make_providers",
    "make_state_dir",
    "seed_files",
]


def seed_files(store: FileStore, folder: Path) -> None:
    """Copy a folder into the mock conversation folder: regular files only (a FIFO would block
    the copy, and the gem could not see it anyway; links are not followed)."""
    # read_regular, not gem.folder.read_file: a seed file has no size limit of its own and is
    # read as large as it was when opened (read_file caps it and raises GemLoadError)
    for dirpath, dirs, files in os.walk(folder):
        for name in dirs:
            store.mkdir("workspace", (Path(dirpath) / name).relative_to(folder).as_posix())
        for name in files:
            p = Path(dirpath) / name
            try:
                data = read_regular(p)
            except OSError:  # not a regular file, a link, or gone meanwhile
                continue
            store.write("workspace", p.relative_to(folder).as_posix(), data)
