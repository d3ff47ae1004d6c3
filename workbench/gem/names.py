"""Safe names (SEC2): values from a gem that become file or folder names — the gem `id` (its
state folder; the scaffold's folder), resource ids (cache files), an Ekanos slug (the id).

One rule, here: a letter or digit, then letters, digits, '.', '_' or '-', at most 128
characters, no '..' (SAFE_NAME, also the `pattern` of the shipped manifest schemas, which a
test holds equal to it); and not a name Windows keeps for a device or changes (`reserved`):
CON, PRN, AUX, NUL, COM1–COM9, LPT1–LPT9 in any case and with any extension (`con.txt`,
`Aux.tar.gz`), or a name ending in a dot or a space, which Windows drops (`gem.` is `gem`).
Such a folder cannot be made or opened there, or is another folder's.

A slug (SLUG) is the stricter name `gem-workbench new` takes (the folder, the id and, for
Ekanos, the integration's `slug`) and an Ekanos loader checks: lower case, no '.', at most 63,
no final '-'; `slug_problem` adds `reserved`. The served SDK's defineIntegration applies the
same (sdk/index.ts), held to this one by tests/test_sec_names.py over every name in DEVICES.

A tool's folder of pinned cases (`case_folder`) is the one rule that turns any name a platform
accepts for a tool into a folder name: the name itself when it is a plain one, else an escaped
form that starts with '_' (which no plain name does), so `_x`, `con` and `CON` can be pinned too.
"""

from __future__ import annotations

import hashlib
import re

SAFE_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: SAFE_NAME as the manifest schemas write it (their patterns are Python's: \Z ends the string)
SAFE_NAME_PATTERN = f"^{SAFE_NAME.pattern}\\Z"
#: Windows' reserved device names, lower case (matched against the name before its first dot)
DEVICES = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))]
)
#: a slug; fullmatch, so it ends at the real end of the string ("con\n" is not a slug)
SLUG = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
SLUG_WHAT = "start with a lowercase letter, then lowercase letters, digits or '-' (at most 63, no final '-')"
_SAFE_WHAT = "a letter or digit, then letters, digits, '.', '_' or '-', at most 128 characters, no '..'"


def reserved(name: str) -> str | None:
    """Why Windows cannot have a file or folder of this name, or None."""
    if name.endswith((".", " ")):
        return (
            f"{name!r} ends in {'a dot' if name.endswith('.') else 'a space'}, which Windows drops "
            f"from file names ({name.rstrip('. ')!r} would be the same folder)"
        )
    device = name.split(".", 1)[0].rstrip(" ").lower()
    if device in DEVICES:
        return (
            f"{name!r} is a Windows device name ({device.upper()}; CON, PRN, AUX, NUL, COM1-COM9 "
            "and LPT1-LPT9 are reserved in any case and with any extension): a file or folder "
            "of that name cannot be made there"
        )
    return None


def name_problem(name: str) -> str | None:
    """Why `name` is not a safe name (SAFE_NAME, not `reserved`), or None."""
    if not SAFE_NAME.fullmatch(name):
        return f"{name[:80]!r} is not a safe file name: {_SAFE_WHAT} (SEC2)"
    why = reserved(name)
    return f"{why} (SEC2)" if why else None


def slug_problem(name: str) -> str | None:
    """Why `name` is not a slug (SLUG, not `reserved`), or None."""
    if not SLUG.fullmatch(name):
        return f"{name[:80]!r} is not a slug: {SLUG_WHAT}"
    why = reserved(name)
    return f"{why} (SEC2)" if why else None


#: a tool name that is its own case folder: what pin names take (at most 100, no leading '_')
_PLAIN_FOLDER = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_ESCAPABLE = re.compile(r"[A-Za-z0-9_-]{1,99}")  # no '.': what the hashed form has
#: folders of tests/calls the workbench writes cases into (<gem>/tests/calls/doctor/<tool>/…)
CASE_FOLDERS = ("doctor",)


def case_folder(tool: str) -> str:
    """The folder of tests/calls that holds the cases of `tool`, any string a manifest accepts.

    A plain name (a letter or digit, then letters, digits, '.', '_', '-', at most 100, not
    `reserved`, not a workbench folder such as 'doctor') is its own folder, so existing cases
    stay where they are. Any other name becomes '_' + the name (`_x` → `__x`, `con` → `_con`:
    a leading '_' makes no device name) when it has no '.', else '_' + its safe characters, '.'
    and 16 hex digits of its SHA-256: one-to-one, never a plain name, safe on every system."""
    if _PLAIN_FOLDER.fullmatch(tool) and reserved(tool) is None and tool not in CASE_FOLDERS:
        return tool
    if _ESCAPABLE.fullmatch(tool):
        return "_" + tool
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return "_" + re.sub(r"[^A-Za-z0-9_-]", "-", tool[:40]) + "." + digest
