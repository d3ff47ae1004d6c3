"""The `gem-workbench` command: check a gem, call a tool, export and replay a repro bundle, run
notebooks, start JupyterLab."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _say(text: str, **kw: Any) -> None:
    """Print text a tool may control (its output, error, log rows): control codes made visible,
    a lone surrogate (an input's "\\ud800", echoed) as its JSON escape."""
    from ._json import utf8
    from ._text import terminal_safe

    print(terminal_safe(utf8(text).decode("utf-8")), **kw)


def _fail(err: dict[str, Any]) -> int:
    _say(f"error {err.get('code', 'E_USAGE')}: {err.get('message', '')}", file=sys.stderr)
    _say(json.dumps({"ok": False, "error": err}, ensure_ascii=False, default=str), file=sys.stderr)
    return 1


def _usage(command: str, message: str) -> int:
    """A flag the gem's platform lacks, or a flag's unusable value: one line, exit 2 (argparse's)."""
    _say(f"gem-workbench {command}: error: {message}", file=sys.stderr)
    return 2


def _flags(args: argparse.Namespace) -> tuple[Any, dict[str, Any], list[Any]]:
    """The gem's platform and the open() options and bench actions its flags give (the table's:
    ctx/spec.py); UsageError for a flag of another platform, GemLoadError when no gem is there."""
    from ._options import gem_profile, taken

    profile = gem_profile(args.gem)
    options, actions = taken(args, profile)
    return profile, options, actions


def _check(args: argparse.Namespace) -> int:
    from ._check import check
    from ._errors import GemLoadError, UsageError

    try:  # the flags as `call` takes them: refused when the gem's platform lacks them
        if args.table:  # the flags were parsed (with none given, there is nothing to refuse)
            from ._options import resolve

            profile, options, _ = _flags(args)
            resolve(profile, options)
    except UsageError as exc:
        return _usage("check", exc.message)
    except GemLoadError:
        pass  # check reports it, with the rest
    # the gem's format as workbench.open checks it, then every tool loaded without a call
    problems = check(args.gem, typecheck=args.typecheck)
    for p in problems:
        where = p["file"] + (
            f"#{p['pointer']}" if p.get("pointer") else f":{p['line']}" if p.get("line") else ""
        )
        print(f"{where}: {p['message']}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}", file=sys.stderr)
        return 1
    print(f"{args.gem}: ok" + (", TypeScript tools type-check" if args.typecheck else ""))
    return 0


def _types(args: argparse.Namespace) -> int:
    """`gem-workbench types [GEM]`: the gem's .gem-workbench/ made again from its definition."""
    from ._check import gem_folder
    from ._errors import GemLoadError
    from .platforms import detect
    from .types import refresh

    folder, why = gem_folder(args.gem)
    try:
        if folder is None:
            raise GemLoadError(why, file=str(args.gem))
        manifest = detect(folder).load(folder)
    except GemLoadError as exc:
        return _usage("types", f"{exc.code}: {exc.message}")
    done = refresh(manifest, create=True)
    if done.state == "skipped":
        _say(f"gem-workbench types: error E_PATH: {done.folder}: {done.reason}", file=sys.stderr)
        return 1
    for verb, names in (("wrote", done.written), ("unchanged", done.unchanged), ("removed", done.removed)):
        for name in names:
            _say(f"{verb:9} {done.folder}/{name}")
    return 0


def _seeded_workspace(gem: str, state: str) -> str:
    """DIR/workspace: the conversation folder of `call --state DIR`, first filled from the gem's
    fixtures/workspace (what the mock starts with), then kept as the calls leave it."""
    import shutil

    from ._check import gem_folder

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
            from ._errors import WorkbenchError

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


# of an --input file or stdin: ctx/spec.py's JSON_FILE_BYTES, the bound of a flag's JSON file
INPUT_BYTES = 64 * 1024 * 1024


def _input_text(arg: str) -> tuple[str, str]:
    """(what to call it, its text) of `--input ARG`: the JSON itself, `@FILE` (a regular file
    of at most INPUT_BYTES, read without blocking: a FIFO or a folder is an error) or `-`
    (stdin, as much); UsageError saying why not. A JSON text never starts with @ or is -."""
    from ._errors import GemLoadError, UsageError

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
        from .gem.folder import read_file

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


def _where(bench: Any, call_id: str) -> None:
    """On real providers (`--real`, `--state`): where the state folder and this call's run
    folder are, on stderr (stdout stays the result)."""
    providers = bench.providers
    if "real" not in providers.kind.values() or providers.state_dir is None:
        return
    _say(f"state folder: {providers.state_dir}", file=sys.stderr)
    runs = getattr(providers.files, "runs", None)  # real files: FolderFileStore, runs/<call id>
    if runs is not None:
        run = Path(runs) / call_id
        made = "" if run.is_dir() else " (not made: the call wrote no run files)"
        _say(f"run folder: {run}{made}", file=sys.stderr)


def _call(args: argparse.Namespace) -> int:
    from . import open as open_bench
    from ._errors import UsageError, WorkbenchError
    from ._options import apply_actions, table

    try:
        source, text = _input_text(args.input)
    except UsageError as exc:
        return _usage("call", exc.message)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if source != "--input":  # a file's or stdin's: where in it, one line
            where = f"line {exc.lineno} column {exc.colno}"
            return _usage("call", f"{source} is not JSON: {exc.msg} at {where}")
        return _fail({"code": "E_USAGE", "message": f"--input is not JSON: {exc.msg} at column {exc.colno}"})
    except RecursionError:  # the parser's own guard, near 1,000 levels: far past any input's
        from .ctx.limits import DEFAULT

        depth = DEFAULT.json_depth
        message = f"--input is nested too deeply (an input: at most {depth} levels)"
        return _fail({"code": "E_SCHEMA", "message": message, "field": "--input", "limit": depth})
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        if source != "--input":
            return _usage("call", f"{source} is not usable JSON: {exc}")
        return _fail({"code": "E_USAGE", "message": f"--input is not usable JSON: {exc}"})
    try:
        profile, options, actions = _flags(args)
        if args.pin is not None:  # a name that cannot be a file name: refused before the call
            from ._pins import case_path

            case_path(Path(args.gem), args.tool, args.pin)
    except UsageError as exc:
        return _usage("call", exc.message)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    try:
        if args.state:  # state kept between invocations: storage and files in DIR, the mock's seed once
            from .providers.statedir import make_state_dir

            make_state_dir(Path(args.state))  # E_STATE for a file or a link loop, not a traceback
            options.update(providers="real", state_dir=args.state)
            if "workspace" in table(profile):  # a platform with a conversation folder
                options["workspace"] = options.get("workspace") or _seeded_workspace(args.gem, args.state)
        bench = open_bench(args.gem, **options)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    with bench:
        try:  # --allow-recipient, --allow-account: on the bench, before the call
            apply_actions(bench, actions)
        except UsageError as exc:
            return _usage("call", exc.message)
        res = bench.call(args.tool, data)
        pinned = _pin(res, args.pin) if args.pin is not None else True
    if res.logs:
        _say(res.logs, end="" if res.logs.endswith("\n") else "\n", file=sys.stderr)
    _where(bench, res.call_id)
    if "files" in (args.show or ()):  # what the call wrote, on stderr: stdout stays the JSON
        from .jupyter.display_files import files_text

        _say(f"files ({len(res.files):,}):", file=sys.stderr)
        for line in files_text(res.files, previews=True):
            _say(line, file=sys.stderr)
    if res.error is not None:
        return _fail(res.error.to_dict())
    for v in [*res.violations, *res.warnings]:
        _say(f"warning: {v}", file=sys.stderr)
    for row in res.log_rows:  # Ekanos' ctx.logger
        _say(
            f"[{row['level']}] {row['message']} {json.dumps(row['fields'], ensure_ascii=False)}",
            file=sys.stderr,
        )
    if res.expected_failure:  # K2: an {error} the model would explain; not a fault
        print("expected failure: the tool returned {error}", file=sys.stderr)
    _say(json.dumps(res.value, ensure_ascii=False, indent=2))
    return 0 if pinned else 1  # the call ran, but `--pin` did not keep it


def _pin(res: Any, name: str) -> bool:
    """`call --pin NAME`: pin the call and say where, or why not, on stderr (stdout stays the
    JSON result); whether it was pinned."""
    from ._errors import WorkbenchError
    from .jupyter.pinflag import shown_path

    try:
        path = res.pin(name)
    except WorkbenchError as exc:
        _say(f"error {exc.code}: not pinned: {exc.message}", file=sys.stderr)
        return False
    _say(f"pinned: {shown_path(Path(path))}", file=sys.stderr)
    return True


def _export_calls(given: list[str]) -> list[tuple[str, Any]]:
    """`--call TOOL[=JSON|=@FILE|=-]` values as (tool, input); UsageError saying which is bad."""
    from ._errors import UsageError

    out = []
    for text in given:
        tool, eq, arg = text.partition("=")
        if not tool:
            raise UsageError(f"--call {text!r}: give TOOL or TOOL=JSON")
        source, body = _input_text(arg) if eq else ("--call", "{}")
        try:
            out.append((tool, json.loads(body)))
        except (ValueError, RecursionError) as exc:
            raise UsageError(
                f"--call {tool}: {source if source != '--input' else 'its input'} is not JSON: {exc}"
            ) from None
    return out


def _export(args: argparse.Namespace) -> int:
    """`gem-workbench export GEM`: open it (the flags' options), make the --call calls, write
    the bench as a repro bundle and print its path."""
    from . import open as open_bench
    from ._bundle import SUFFIX
    from ._check import gem_folder
    from ._errors import UsageError, WorkbenchError
    from ._options import apply_actions

    try:
        calls = _export_calls(args.calls or [])
        profile, options, actions = _flags(args)
    except UsageError as exc:
        return _usage("export", exc.message)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    root, _ = gem_folder(args.gem)
    out = Path(args.out) if args.out else Path.cwd() / f"{root.name if root else 'gem'}{SUFFIX}"
    try:
        with open_bench(args.gem, **options) as bench:
            try:
                apply_actions(bench, actions)
            except UsageError as exc:
                return _usage("export", exc.message)
            for n, (tool, data) in enumerate(calls):
                res = bench.call(tool, data)
                said = "ok" if res.error is None else f"error {res.error.code}: {res.error.message}"
                _say(f"call {n} {tool}: {said}", file=sys.stderr)
            path = bench.export(out)
    except UsageError as exc:
        return _usage("export", exc.message)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    _say(str(path))
    return 0


def _replay(args: argparse.Namespace) -> int:
    """`gem-workbench replay BUNDLE`: each call run again, one JSON line each on stdout; exit 1
    when any result differs from the recorded one."""
    from ._bundlerun import replay_bundle
    from ._errors import UsageError, WorkbenchError

    try:
        reruns = replay_bundle(args.bundle, call=args.call, trust=args.trust)
    except UsageError as exc:
        return _usage("replay", exc.message)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    if not reruns:
        _say(f"{args.bundle}: the bundle has no calls", file=sys.stderr)
    for r in reruns:
        _say(json.dumps(r.to_json(), ensure_ascii=False))
        how = {
            "case": "its pinned case",
            "doctor": "its doctor's case",
            "sequence": "the bundle's start, served its answers",
        }.get(r.how, "the gem's fixtures")
        _say(f"call {r.n} {r.tool} (from {how}): {'matches' if r.ok else 'differs'}", file=sys.stderr)
        if r.note:
            _say(f"  {r.note}", file=sys.stderr)
        for line in r.lines:
            _say(f"  {line}", file=sys.stderr)
    return 0 if all(r.ok for r in reruns) else 1


def _test(args: argparse.Namespace) -> int:
    import subprocess

    notebooks = args.notebooks or sorted(str(p) for p in Path("notebooks").glob("*.ipynb"))
    if not notebooks:
        print("error: no notebooks given and none in notebooks/", file=sys.stderr)
        return 5  # pytest's "no tests collected"
    argv = [*notebooks, "--nb"]
    if args.timeout is not None:
        argv.append(f"--nb-timeout={args.timeout}")
    if args.kernel:
        argv.append(f"--nb-kernel={args.kernel}")
    if args.update_pins:
        argv.append("--update-pins")
    if args.workers:  # pytest-xdist: each notebook already has its own kernel and state
        argv += ["-n", args.workers]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        # Otherwise the entry point loads it; loading it twice under two names is an error.
        argv += ["-p", "workbench.testing.plugin"]
    # A separate process: pytest must import `workbench` itself (it rewrites the asserts of a
    # plugin's package, and warns when that package is already imported, as it is here).
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *argv, *args.extra])
    try:
        return proc.wait()
    except KeyboardInterrupt:  # pytest got the same SIGINT: let it report and stop
        return proc.wait()


def _kernel_install(args: argparse.Namespace) -> int:
    from . import _kernelspec

    prefix = sys.prefix if args.sys_prefix else args.prefix
    try:
        dest = _kernelspec.install(
            name=args.name, display_name=args.display_name, user=prefix is None, prefix=prefix
        )
    except ValueError as exc:  # a kernel name Jupyter refuses
        return _fail({"code": "E_USAGE", "message": f"--name {args.name!r}: {exc}"})
    except OSError as exc:
        return _fail({"code": "E_USAGE", "message": f"cannot install the kernelspec: {exc}"})
    print(f"Installed kernelspec {args.name} ({args.display_name}) in {dest}, running {sys.executable}")
    return 0


def _lab(args: argparse.Namespace) -> int:
    from . import _lab as lab

    return lab.run(args.path, ip=args.ip, port=args.port, browser=not args.no_browser, extra=args.extra)


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """`gem-workbench test|lab … -- ARGS`: ARGS go to pytest or jupyter lab untouched."""
    if argv[:1] in (["test"], ["lab"]) and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    own, extra = _split_passthrough(list(sys.argv[1:] if argv is None else argv))
    command = next((a for a in own if not a.startswith("-")), None)
    # the open() flags are the capabilities' rows (the ctx layer, every platform): built for
    # `call`, and for `check` only when flags or --help are given, so `check GEM` and the other
    # commands do not import the ctx layer or read the plugins (start-up: docs/benchmarks.md)
    table = command in ("call", "export", "doctor") or (
        command == "check" and any(a in ("-h", "--help") for a in own)
    )
    parser = _parser(table=table)
    if command == "check" and not table:
        args, rest = parser.parse_known_args(own)
        if rest:  # a flag of the table (or a mistake): parse again knowing every flag
            parser = _parser(table=True)
    args = parser.parse_args(own)
    args.extra = extra
    import warnings

    # a gem's, plugin's or types folder's warning is one line, as a tool's warnings are (not
    # Python's "file:line: Category: …" form pointing into the workbench)
    warnings.showwarning = _show_warning
    from ._errors import command_line

    try:
        with command_line():  # hints name this command's flags, not open()'s keywords
            return int(args.fn(args))
    except KeyboardInterrupt:  # Ctrl-C: the bench closed on the way out; one line, the shell's 130
        print(f"gem-workbench {args.command}: interrupted", file=sys.stderr)
        return 130


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    _say(f"warning: {message}", file=sys.stderr)


def _version() -> str:
    """The installed distribution's version, or the package's own when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gem-workbench")
    except PackageNotFoundError:
        from . import __version__

        return __version__


class _Version(argparse.Action):
    """--version, read only when given (importlib.metadata is not imported for other commands)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"gem-workbench {_version()}")
        parser.exit()


def _parser(*, table: bool) -> argparse.ArgumentParser:
    """The command line; `table`: with `call`'s and `check`'s open() flags."""
    parser = argparse.ArgumentParser(prog="gem-workbench", description=__doc__)
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_flags(p: argparse.ArgumentParser) -> None:
        if table:
            from ._options import add_flags as add

            add(p)

    p = sub.add_parser(
        "check",
        help="lint a gem: manifest, schemas, tool files (exit 1 on error); the open() flags of `call` are checked against the gem's platform",
    )
    p.add_argument("gem")
    p.add_argument(
        "--typecheck", action="store_true", help="also type-check TypeScript tools with `deno check`"
    )
    add_flags(p)
    p.set_defaults(fn=_check, table=table)
    from ._doctorcli import add_parser as add_doctor
    from .scaffold import add_parser as add_new

    add_new(sub)
    add_doctor(sub, add_flags)
    p = sub.add_parser("call", help="call one tool and print its result as JSON (exit 1 on error)")
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
    add_flags(p)  # every platform's open() flags and bench actions, by capability (ctx/spec.py)
    p.set_defaults(fn=_call)
    p = sub.add_parser(
        "export",
        help="open a gem (mock providers unless the flags say otherwise), make the --call calls and "
        "write the bench as a repro bundle: one .gemrepro file with its state, calls and the gem's "
        "files, secrets masked; prints its path",
    )
    p.add_argument("gem")
    p.add_argument("--out", metavar="FILE", help="the bundle (default: <gem folder name>.gemrepro here)")
    p.add_argument(
        "--call",
        action="append",
        dest="calls",
        metavar="TOOL[=JSON|=@FILE]",
        help="call TOOL with this input before exporting (repeatable, in order; default input {})",
    )
    add_flags(p)
    p.set_defaults(fn=_export)
    p = sub.add_parser(
        "replay",
        help="run a bundle's calls again on mock providers and print each result as a JSON line "
        "with whether it matches the recorded one (exit 1 if any differs)",
    )
    p.add_argument("bundle")
    p.add_argument("--call", type=int, metavar="N", help="only call N of the bundle (0 is the first)")
    p.add_argument(
        "--trust",
        action="store_true",
        help="run the bundle's Python tools and tests/doctor.py in this process (refused without it)",
    )
    p.set_defaults(fn=_replay)
    p = sub.add_parser(
        "types",
        help="write the gem's .gem-workbench/ again from its definition: the ctx and tool-input "
        "types and the manifest's JSON Schema for editors (open, reload and check refresh it "
        "when stale)",
    )
    p.add_argument("gem", nargs="?", default=".", help="the gem folder (default: the current one)")
    p.set_defaults(fn=_types)
    p = sub.add_parser(
        "test",
        help="run notebooks as tests on fresh Gem Workbench kernels, a gem's pinned calls "
        "(tests/calls/**.json) on fresh mock benches, and an Ekanos integration's "
        "tests/*.test.ts with deno test (exit code of pytest); after `--`, arguments for pytest",
    )
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="PATH",
        help="notebooks, folders (a gem folder: its pinned calls too), or integration folders / "
        "*.test.ts files (default: notebooks/*.ipynb)",
    )
    p.add_argument(
        "--update-pins",
        action="store_true",
        help="write each pinned call that replays otherwise again from its replay (the new "
        "result, changes and effects become the expected ones); the cases rewritten are listed",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per-cell timeout, per file for TS tests (default: ini nb_timeout, 120; 0: none)",
    )
    p.add_argument("--kernel", metavar="NAME", help="kernel to run on (default: gem-workbench)")
    p.add_argument(
        "-n",
        "--workers",
        metavar="N",
        help="run notebooks in N processes at once (pytest-xdist; 'auto': one per CPU)",
    )
    p.set_defaults(fn=_test)
    p = sub.add_parser("kernel", help="manage the Gem Workbench kernelspec")
    ksub = p.add_subparsers(dest="kernel_command", required=True)
    p = ksub.add_parser(
        "install",
        help="install the kernelspec for another Jupyter; it runs "
        "this environment's Python (default: --user)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user (the default)")
    where.add_argument("--sys-prefix", action="store_true", help=f"into this environment ({sys.prefix})")
    where.add_argument("--prefix", metavar="P", help="into P/share/jupyter/kernels")
    p.add_argument("--name", default="gem-workbench", help="kernel name (default gem-workbench)")
    p.add_argument(
        "--display-name", default="Gem Workbench", help="name shown in Jupyter (default 'Gem Workbench')"
    )
    p.set_defaults(fn=_kernel_install)
    p = sub.add_parser(
        "lab",
        help="start JupyterLab with the Gem Workbench kernel as default; "
        "after `--`, arguments for jupyter lab",
    )
    p.add_argument("path", nargs="?", default="notebooks", help="folder to open (default: notebooks)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--port", type=int, help="port (default: 8888 or the next free one)")
    p.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.set_defaults(fn=_lab)
    return parser


if __name__ == "__main__":
    sys.exit(main())
