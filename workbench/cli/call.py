"""`gem-workbench call GEM TOOL`: call one tool and print its result as JSON (stdout), what
else it did on stderr; exit 1 on error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ._out import fail, input_text, open_flags, say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "call", help="call one tool and print its result as JSON (exit 1 on error)"
    )
    p.add_argument("gem")
    p.add_argument("tool")
    p.add_argument(
        "--input",
        default="{}",
        metavar="JSON|@FILE|-",
        help="the tool's input: JSON, @FILE for a JSON file (at most 64 MiB), or - to read "
        "it from stdin (default {})",
    )
    p.add_argument(
        "--state",
        metavar="DIR",
        help="keep state between invocations in DIR: storage, run folders and the conversation "
        "folder (DIR/workspace, first copied from the gem's fixtures/workspace)",
    )
    p.add_argument(
        "--pin",
        metavar="NAME",
        help="also save the call as a regression case, tests/calls/TOOL/NAME.json of the gem, "
        "replayed by `gem-workbench test GEM` (its path is printed on stderr)",
    )
    p.add_argument(
        "--show",
        action="append",
        choices=["files"],
        metavar="files",
        help="also print, on stderr, the files the call created, modified, moved or deleted, "
        "with text previews and diffs (stdout stays the JSON result)",
    )
    flags(p)  # every platform's open() flags and bench actions, by capability (ctx/spec.py)
    return p


def run(args: argparse.Namespace) -> int:
    from .. import open as open_bench
    from .._errors import UsageError, WorkbenchError
    from ..bench.options import apply_actions, table

    data, code = _input(args)
    if code is not None:
        return code
    try:
        profile, options, actions = open_flags(args)
        if args.pin is not None:  # a name that cannot be a file name: refused before the call
            from ..pins.case import case_path

            case_path(Path(args.gem), args.tool, args.pin)
    except UsageError as exc:
        return usage("call", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    try:
        if args.state:  # state kept between invocations: storage and files in DIR, the mock's seed once
            from ..ctx.stores import make_state_dir

            make_state_dir(Path(args.state))  # E_STATE for a file or a link loop, not a traceback
            options.update(providers="real", state_dir=args.state)
            if "workspace" in table(profile):  # a platform with a conversation folder
                options["workspace"] = options.get("workspace") or _seeded_workspace(args.gem, args.state)
        bench = open_bench(args.gem, **options)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    with bench:
        try:  # --allow-recipient, --allow-account: on the bench, before the call
            apply_actions(bench, actions)
        except UsageError as exc:
            return usage("call", exc.message)
        res = bench.call(args.tool, data)
        pinned = _pin(res, args.pin) if args.pin is not None else True
    return _report(args, bench, res, pinned)


def _input(args: argparse.Namespace) -> tuple[Any, int | None]:
    """(the tool's input, None) of `--input`, or (None, the exit code) with what is wrong said."""
    from .._errors import UsageError

    try:
        source, text = input_text(args.input)
    except UsageError as exc:
        return None, usage("call", exc.message)
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        if source != "--input":  # a file's or stdin's: where in it, one line
            where = f"line {exc.lineno} column {exc.colno}"
            return None, usage("call", f"{source} is not JSON: {exc.msg} at {where}")
        message = f"--input is not JSON: {exc.msg} at column {exc.colno}"
        return None, fail({"code": "E_USAGE", "message": message})
    except RecursionError:  # the parser's own guard, near 1,000 levels: far past any input's
        from ..ctx.limits import DEFAULT

        depth = DEFAULT.json_depth
        message = f"--input is nested too deeply (an input: at most {depth} levels)"
        return None, fail({"code": "E_SCHEMA", "message": message, "field": "--input", "limit": depth})
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        if source != "--input":
            return None, usage("call", f"{source} is not usable JSON: {exc}")
        return None, fail({"code": "E_USAGE", "message": f"--input is not usable JSON: {exc}"})


def _report(args: argparse.Namespace, bench: Any, res: Any, pinned: bool) -> int:
    """The call's result as JSON on stdout, its logs, files, warnings and rows on stderr; the
    exit code (1 on error, or when `--pin` did not keep it)."""
    if res.logs:
        say(res.logs, end="" if res.logs.endswith("\n") else "\n", file=sys.stderr)
    _where(bench, res.call_id)
    if "files" in (args.show or ()):  # what the call wrote, on stderr: stdout stays the JSON
        from ..jupyter.display_files import files_text

        say(f"files ({len(res.files):,}):", file=sys.stderr)
        for line in files_text(res.files, previews=True):
            say(line, file=sys.stderr)
    if res.error is not None:
        return fail(res.error.to_dict())
    for v in [*res.violations, *res.warnings]:
        say(f"warning: {v}", file=sys.stderr)
    for row in res.log_rows:  # Ekanos' ctx.logger
        say(
            f"[{row['level']}] {row['message']} {json.dumps(row['fields'], ensure_ascii=False)}",
            file=sys.stderr,
        )
    if res.expected_failure:  # K2: an {error} the model would explain; not a fault
        print("expected failure: the tool returned {error}", file=sys.stderr)
    say(json.dumps(res.value, ensure_ascii=False, indent=2))
    return 0 if pinned else 1  # the call ran, but `--pin` did not keep it


def _seeded_workspace(gem: str, state: str) -> str:
    """DIR/workspace: the conversation folder of `call --state DIR`, first filled from the gem's
    fixtures/workspace (what the mock starts with), then kept as the calls leave it."""
    import shutil

    from .._check import gem_folder

    folder = Path(state) / "workspace"
    if not folder.exists():
        root, _ = gem_folder(gem)
        seed = root / "fixtures" / "workspace" if root else None
        try:
            if seed is not None and seed.is_dir():  # FIFOs, sockets, devices: not copied (never read)
                shutil.copytree(seed, folder, symlinks=True, ignore=_not_copied)
            else:
                folder.mkdir(parents=True)
        except (OSError, shutil.Error) as exc:
            from .._errors import WorkbenchError

            raise WorkbenchError(
                "E_STATE", f"the conversation folder {folder} cannot be made: {exc}", path=str(folder)
            ) from None
    return str(folder)


def _not_copied(folder: str, names: list[str]) -> list[str]:
    """The entries of a seed folder that are not files, folders or links (a FIFO would block)."""
    import stat

    out = []
    for n in names:
        try:
            mode = os.lstat(os.path.join(folder, n)).st_mode
        except OSError:
            out.append(n)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            out.append(n)
    return out


def _where(bench: Any, call_id: str) -> None:
    """On real providers (`--real`, `--state`): where the state folder and this call's run
    folder are, on stderr (stdout stays the result)."""
    providers = bench.providers
    if "real" not in providers.kind.values() or providers.state_dir is None:
        return
    say(f"state folder: {providers.state_dir}", file=sys.stderr)
    runs = getattr(providers.files, "runs", None)  # real files: FolderFileStore, runs/<call id>
    if runs is not None:
        run = Path(runs) / call_id
        made = "" if run.is_dir() else " (not made: the call wrote no run files)"
        say(f"run folder: {run}{made}", file=sys.stderr)


def _pin(res: Any, name: str) -> bool:
    """`call --pin NAME`: pin the call and say where, or why not, on stderr (stdout stays the
    JSON result); whether it was pinned."""
    from .._errors import WorkbenchError
    from ..jupyter.pinflag import shown_path

    try:
        path = res.pin(name)
    except WorkbenchError as exc:
        say(f"error {exc.code}: not pinned: {exc.message}", file=sys.stderr)
        return False
    say(f"pinned: {shown_path(Path(path))}", file=sys.stderr)
    return True


register("call", add, run, flags="always")
