"""The plugin API: what a platform or capability plugin builds on, from one module
(docs/platforms.md). A platform plugin registers a `Profile` in the `gem_workbench.platforms`
entry-point group, a capability plugin a `CapabilitySpec` in `gem_workbench.capabilities`.

    from workbench.plugin import Capability, Method, Profile, lint_manifest

At load every plugin is checked as `check` does (its rows against the classes that implement
them, its functions against what the workbench passes them); one with a problem is skipped
with a `PluginWarning` naming `platform.row.method(param)`, and the workbench works on.

The capability names (CapabilitySpec, StatePart, …) live in the ctx layer and are imported on
first use, so a platform plugin that needs none of them loads without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import CODES, GemLoadError, UsageError, WorkbenchError
from ._plugins import PluginWarning
from .gem.folder import read_json
from .gem.lint import (
    MAX_PROBLEMS,
    ManifestLint,
    check_tools,
    gem_root,
    link_problems,
    lint_manifest,
    raise_problems,
    tool_specs,
)
from .gem.model import Manifest, ToolSpec
from .gem.rules import SchemaRules
from .platforms.base import (
    Capability,
    Declarations,
    EntryPoint,
    Grants,
    Limits,
    Method,
    Profile,
    Scaffold,
    Verdict,
    fill_template,
)
from .platforms.shapes import FETCH_PY, FETCH_TS, FILES_PY, FILES_TS

if TYPE_CHECKING:
    from .ctx import CallSession
    from .ctx.parts import Change, Effect, Reach, Refusal, StateContext, StatePart
    from .ctx.spec import (
        Action,
        CapabilitySpec,
        Flag,
        OpenContext,
        Option,
        View,
        checked,
        file_or,
        number,
        path_or,
    )

__all__ = [
    "CODES",
    "FETCH_PY",
    "FETCH_TS",
    "FILES_PY",
    "FILES_TS",
    "MAX_PROBLEMS",
    "Action",
    "CallSession",
    "Capability",
    "CapabilitySpec",
    "Change",
    "Declarations",
    "Effect",
    "EntryPoint",
    "Flag",
    "GemLoadError",
    "Grants",
    "Limits",
    "Manifest",
    "ManifestLint",
    "Method",
    "OpenContext",
    "Option",
    "PluginWarning",
    "Profile",
    "Reach",
    "Refusal",
    "Scaffold",
    "SchemaRules",
    "StateContext",
    "StatePart",
    "ToolSpec",
    "UsageError",
    "Verdict",
    "View",
    "WorkbenchError",
    "check",
    "check_tools",
    "checked",
    "file_or",
    "fill_template",
    "gem_root",
    "link_problems",
    "lint_manifest",
    "number",
    "path_or",
    "raise_problems",
    "read_json",
    "tool_specs",
]

#: the ctx layer's names, by the module that holds them (PEP 562: imported on first use)
_LAZY = {
    **dict.fromkeys(("CallSession",), "workbench.ctx"),
    **dict.fromkeys(
        ("Change", "Effect", "Reach", "Refusal", "StateContext", "StatePart"), "workbench.ctx.parts"
    ),
    **dict.fromkeys(
        (
            "Action",
            "CapabilitySpec",
            "Flag",
            "OpenContext",
            "Option",
            "View",
            "checked",
            "file_or",
            "number",
            "path_or",
        ),
        "workbench.ctx.spec",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'workbench.plugin' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def check(plugin: Profile | CapabilitySpec) -> list[str]:
    """The problems the load-time check finds in a plugin's Profile or CapabilitySpec, each
    naming its place (`platform.row.method(param)`); [] when it loads. For a plugin's own
    tests: `assert check(PROFILE) == []`. A profile's rows are looked up among the
    capabilities installed (the built-ins and the plugins')."""
    from .ctx.registry import implementation
    from .ctx.spec import CapabilitySpec
    from .ctx.verify import profile_problems, spec_problems

    if isinstance(plugin, Profile):
        return profile_problems(plugin, implementation)
    if isinstance(plugin, CapabilitySpec):
        return spec_problems(plugin)
    raise UsageError(
        f"check(plugin): give a Profile or a CapabilitySpec, not {type(plugin).__name__}",
        field="plugin",
    )
