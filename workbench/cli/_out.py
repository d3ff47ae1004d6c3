"""What the commands share: printing what a tool may control, the exit codes of an error and
of a usage error, the open() options of the flags, and `--input`'s JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# of an --input file or stdin: ctx/spec.py's JSON_FILE_BYTES, the bound of a flag's JSON file
INPUT_BYTES = 64 * 1024 * 1024


def say(text: str, **kw: Any) -> None:
    """Print text a tool may control (its output, error, log rows): control codes made visible,
    a lone surrogate (an input's "\\ud800", echoed) as its JSON escape."""
    from .._json import utf8
    from .._text import terminal_safe

    print(terminal_safe(utf8(text).decode("utf-8")), **kw)


def fail(err: dict[str, Any]) -> int:
    """An error (a WorkbenchError's dict) on stderr, one line and then as JSON: exit 1."""
    say(f"error {err.get('code', 'E_USAGE')}: {err.get('message', '')}", file=sys.stderr)
    say(json.dumps({"ok": False, "error": err}, ensure_ascii=False, default=str), file=sys.stderr)
    return 1


def usage(command: str, message: str) -> int:
    """A flag the gem's platform lacks, or a flag's unusable value: one line, exit 2 (argparse's)."""
    say(f"gem-workbench {command}: error: {message}", file=sys.stderr)
    return 2


def open_flags(args: argparse.Namespace) -> tuple[Any, dict[str, Any], list[Any]]:
    """The gem's platform and the open() options and bench actions its flags give (the table's:
    ctx/spec.py); UsageError for a flag of another platform, GemLoadError when no gem is there."""
    from ..bench.options import gem_profile, taken

    profile = gem_profile(args.gem)
    options, actions = taken(args, profile)
    return profile, options, actions


def input_text(arg: str) -> tuple[str, str]:
    """(what to call it, its text) of `--input ARG`: the JSON itself, `@FILE` (a regular file
    of at most INPUT_BYTES, read without blocking: a FIFO or a folder is an error) or `-`
    (stdin, as much); UsageError saying why not. A JSON text never starts with @ or is -."""
    from .._errors import GemLoadError, UsageError

    if arg == "-":
        name = "--input - (stdin)"
        if sys.stdin is None:
            raise UsageError(f"{name}: there is no stdin")
        try:
            data = sys.stdin.buffer.read(INPUT_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"{name} cannot be read: {exc.strerror}") from None
        if len(data) > INPUT_BYTES:
            raise UsageError(f"{name} is larger than {INPUT_BYTES:,} bytes")
    elif arg.startswith("@"):
        from ..gem.folder import read_file

        name = f"--input {arg}"
        if arg == "@":
            raise UsageError("--input @: name a file after the @, e.g. --input @input.json")
        try:
            data = read_file(Path(arg[1:]).expanduser(), INPUT_BYTES)
        except GemLoadError as exc:
            raise UsageError(f"{name}: {exc.message}") from None
    else:
        return "--input", arg
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name} is not UTF-8 ({exc.reason} at byte {exc.start})") from None


def show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """warnings.showwarning of the command line: one line (a gem's, plugin's or types folder's
    warning, as a tool's warnings are), not Python's "file:line: Category: …" form."""
    say(f"warning: {message}", file=sys.stderr)
