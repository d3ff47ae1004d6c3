"""Hints in the words of the surface in use: a message that tells the user how to give an
option or run a bench action names the command-line flag when the `gem-workbench` command shows
it, and the Python keyword or call in a notebook or script.

The `gem-workbench` command runs within `_errors.command_line()`. Both spellings come from the
option table (ctx/spec.py: an `Option`'s flags, an `Action`'s flag and its `python` form), so a
message never carries a second, hand-written copy of either. The caller names the capabilities
whose rows to read (`among`, usually its own SPEC): a capability's module hints at its own
option, and the registry, which imports every capability, is not imported back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._errors import in_command_line

if TYPE_CHECKING:
    from .spec import CapabilitySpec

__all__ = ["spell_action", "spell_option"]


def spell_action(flag: str, *values: str, among: Iterable[CapabilitySpec]) -> str:
    """How the user runs the bench action of `flag` (e.g. --allow-account) with `values`
    (none: its placeholder): `--allow-account all`, or `bench.email.allow('all')`."""
    action = next((a for s in among for a in s.actions if a.flag == flag), None)
    if action is None:  # a table without it (a plugin's flag): the flag is all there is to say
        return f"{flag} {' '.join(values)}".strip()
    if in_command_line() or not action.python:
        return " ".join(f"{flag} {v}" for v in values or (action.metavar,))
    given = values[0] if len(values) == 1 else list(values)
    return action.python.format(repr(given) if values else action.python_values)


def spell_option(name: str, python_value: str, *, among: Iterable[CapabilitySpec], what: str = "") -> str:
    """How the user gives the open() option `name`: its first flag with its metavar (and
    `what` the flag takes, when said), or `workbench.open(..., name=python_value)`."""
    if in_command_line():
        for spec in among:
            for o in spec.options:
                if o.name == name and o.flags:
                    f = o.flags[0]
                    text = f.flag if f.how in ("const", "optional") else f"{f.flag} {f.metavar or 'VALUE'}"
                    return f"{text} ({what or f.help})"
    return f"workbench.open(..., {name}={python_value})"
