"""Notochord's permissions (E1, N10, R1), decided once per (gem, tool) into `Grants`.

Each denial names the manifest field to add, as a JSON pointer into manifest.json.
"""

from __future__ import annotations

import copy
from typing import Any

from ...gem.model import Manifest, ToolSpec
from ..base import Grants


def _reads_email(perms: Any) -> bool:
    email = perms.get("email") if isinstance(perms, dict) else None
    return email is True or (isinstance(email, dict) and email.get("read") is True)


def _has_http(perms: Any) -> bool:
    return isinstance(perms, dict) and isinstance(perms.get("http"), dict)


def _index(manifest: Manifest, tool: ToolSpec) -> int:
    return next((i for i, t in enumerate(manifest.raw.get("tools", ())) if t.get("name") == tool.name), 0)


def _email(manifest: Manifest, tool: ToolSpec) -> tuple[str, dict[str, Any]] | None:
    """E1: email needs read at top level (or the Gem Studio draft shorthand) and on the tool."""
    missing = []
    if not (manifest.raw.get("email") is True or _reads_email(manifest.permissions)):
        missing.append(
            '/permissions/email (top level: {"read": true}, or the Gem Studio draft shorthand "email": true)'
        )
    if not _reads_email(tool.permissions):
        missing.append(
            f'/tools/{_index(manifest, tool)}/permissions/email ({{"read": true}} on tool {tool.name!r})'
        )
    if not missing:
        return None
    return (
        f"tool {tool.name!r} has no email permission (E1): manifest.json needs {' and '.join(missing)}",
        {"field": "permissions.email", "missing": [m.split(" ", 1)[0] for m in missing]},
    )


def _http(manifest: Manifest, tool: ToolSpec) -> tuple[str, dict[str, Any]] | None:
    """N10: fetch needs `permissions.http` at top level, and on the tool when the tool
    declares permissions of its own."""
    missing = []
    if not _has_http(manifest.permissions):
        missing.append("/permissions/http")
    if tool.permissions and not _has_http(tool.permissions):
        missing.append(f"/tools/{_index(manifest, tool)}/permissions/http")
    if not missing:
        return None
    return (
        f"tool {tool.name!r} has no http permission (N10): manifest.json needs {' and '.join(missing)}",
        {"field": "permissions.http", "missing": missing},
    )


def _resources(manifest: Manifest, tool: ToolSpec) -> tuple[str, dict[str, Any]] | None:
    """R1: ctx.resources exists only when the manifest declares `resources`."""
    if manifest.resources:
        return None
    return (
        f"gem {manifest.id!r} declares no resources in manifest.json (R1): add /resources",
        {"field": "resources", "missing": ["/resources"]},
    )


DECIDERS = {"email": _email, "http": _http, "resources": _resources}


def connections(manifest: Manifest, tool: ToolSpec) -> dict[str, Any]:
    """N10/SEC4: the connection grants of `tool`'s fetches ({name: {hosts, paths?}}): the
    tool's own `permissions.http.connections` when it declares them, else the manifest's; a
    deep copy, so the grants a call starts with are the ones it keeps."""
    perms = (
        tool.permissions
        if _has_http(tool.permissions) and "connections" in tool.permissions["http"]
        else manifest.permissions
    )
    http = perms.get("http") if isinstance(perms, dict) else None
    conns = (http if isinstance(http, dict) else {}).get("connections") or {}
    return copy.deepcopy(dict(conns)) if isinstance(conns, dict) else {}


def grants_for(manifest: Manifest, tool: ToolSpec) -> Grants:
    """What `tool` of `manifest` may use under Notochord's rules."""
    granted, denials = set(), {}
    for name, decide in DECIDERS.items():
        denial = decide(manifest, tool)
        if denial is None:
            granted.add(name)
        else:
            denials[name] = denial
    return Grants(frozenset(granted), denials, settings={"http.connections": connections(manifest, tool)})
