"""`gem-workbench conversation GEM FILE`: a recorded conversation's tool calls run again in
order on the gem, a line per call (match / differs / error / unknown_tool / no_result) with the
lines of what differs; exit 1 when any call does not replay as recorded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._out import fail, open_flags, say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "conversation",
        help="replay a recorded conversation's tool calls (OpenAI Chat Completions, OpenAI "
        "Responses or Anthropic Messages JSON) on the gem and compare each result with the "
        "recorded one (exit 1 if any differs)",
    )
    p.add_argument("gem")
    p.add_argument(
        "file",
        metavar="FILE",
        help="the transcript: a JSON file (a list of messages or items, or an object with "
        '"messages", "input" or "output"), a saved tests/conversations/NAME.json, or - for stdin',
    )
    p.add_argument(
        "--save",
        metavar="NAME",
        help="also keep it as a test, tests/conversations/NAME.json of the gem, replayed by "
        "`gem-workbench test GEM` (its path is printed on stderr)",
    )
    p.add_argument(
        "--tool-name",
        action="append",
        default=[],
        metavar="SEEN=TOOL",
        help="the model called the gem's TOOL by the name SEEN (repeatable; by default a name "
        "is the tool's own, or a platform's other name for it)",
    )
    flags(p)  # every platform's open() flags and bench actions, by capability (ctx/spec.py)
    return p


def _names(pairs: list[str]) -> dict[str, str]:
    from .._errors import UsageError

    out = {}
    for pair in pairs:
        seen, sep, tool = pair.partition("=")
        if not sep or not seen or not tool:
            raise UsageError(f"--tool-name {pair!r}: give SEEN=TOOL, e.g. --tool-name notes_add=add_note")
        out[seen] = tool
    return out


def _source(file: str) -> Any:
    """The transcript's path, or stdin's bytes for `-` (read within the transcript bound)."""
    from .._errors import UsageError
    from ..conversations.read import CONVERSATION_BYTES

    if file != "-":
        return file
    if sys.stdin is None:
        raise UsageError("FILE -: there is no stdin")
    data = sys.stdin.buffer.read(CONVERSATION_BYTES + 1)
    if not data.strip():
        raise UsageError("FILE -: stdin is empty")
    return data


def run(args: argparse.Namespace) -> int:
    from .. import open as open_bench
    from .._check import gem_folder
    from .._errors import UsageError, WorkbenchError
    from ..bench.options import apply_actions
    from ..bundles.export import is_bundle
    from ..conversations.case import conversation_path, open_options
    from ..conversations.read import read_conversation
    from ..conversations.replay import replay_conversation

    try:
        profile, options, actions = open_flags(args)
        names = _names(args.tool_name)
        root, _ = gem_folder(args.gem)
        if args.save is not None:
            if is_bundle(args.gem) or root is None:
                raise UsageError("--save keeps the case in a gem folder: give the gem's folder, not a bundle")
            conversation_path(root, args.save)  # a name that cannot be a file name: refused first
        conv = read_conversation(_source(args.file), depth=profile.limits.json_depth)
        options = {**open_options(conv.options, root), **options}  # a saved case's, then the flags'
        bench = open_bench(args.gem, **options)
    except UsageError as exc:
        return usage("conversation", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    with bench:
        try:
            apply_actions(bench, actions)
            out = replay_conversation(bench, conv, save=args.save, names=names, options=options)
        except UsageError as exc:
            return usage("conversation", exc.message)
        except WorkbenchError as exc:
            return fail(exc.to_dict())
    for line in out.lines():
        say(line)
    if out.saved is not None:
        from ..jupyter.pinflag import shown_path

        say(f"saved: {shown_path(Path(out.saved))}", file=sys.stderr)
    return 0 if out.ok else 1


register("conversation", add, run, flags="always")
