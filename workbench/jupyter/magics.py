"""The notebook's commands: `%gem`, `%tool` / `%%tool` and `%state`.

    %gem open PATH [--real] [--state-dir DIR] [--strict] [FLAG …]   (FLAGs: `%gem?`)
    %gem                       show the open bench
    %gem close
    %tool NAME INPUT           INPUT as below, on one line
    %tool NAME                 the tool's input form (bench.form(NAME))
    %%tool NAME                the cell body is the INPUT
    %tool NAME INPUT --pin CASE, %%tool NAME --pin CASE
                               call, then pin the call: tests/calls/NAME/CASE.json of the gem
    %state files | kv | calls | tools | data NAME | sql QUERY | history [PATH]
    %%state sql                the cell body is the query

`%gem open` puts the bench in the notebook variable `bench`; `%tool` and `%state` act on the
Bench in `bench` (or, if that variable was reassigned to something else, on the bench `%gem
open` opened). Opening another gem closes the bench `%gem open` opened before.

The INPUT rule. The text is read as JSON, else as YAML (with JSON's scalars: `no`, `on`,
dates and `0755` stay strings); that value is the input, except that
any string value beginning with `$` is a Python expression evaluated in the notebook
(`title: $t`, `priority: $p + 1`; `$$` stands for a literal `$`). If the text is not JSON or
YAML, or YAML reads it as one bare string (`payload`, `dict(title=t)`), the whole text is
evaluated as a Python expression instead. An empty `%%tool` body is `{}` (an empty
`%tool` line opens the form instead). Note that a Python dict with
variables, `{"title": t}`, is valid YAML: write `{"title": $t}` or `dict(title=t)`.

`--pin CASE` (or `--pin=CASE`) is the flag only as the line's last words and outside every
string and bracket of the INPUT (pinflag.py): `%tool t {"title": "a --pin b"}` pins nothing;
in a plain YAML value, quote it (`title: 'a --pin b'`). The call is pinned as `res.pin(CASE)`
does, and one line says where: `pinned: gems/notes/tests/calls/add_note/first.json`.

A magic that cannot do what it was asked (no bench open, unknown tool, unreadable input, broken
gem, E_SQL, …) prints one line, `error E_CODE: message`, on stderr: no traceback, but the cell
fails, so "Run all" and notebook tests stop there. A tool's own failure is not a magic error:
it is a failed CallResult, displayed like any other.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from types import CodeType
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

from .._errors import WorkbenchError
from ..bench.options import usage
from .pinflag import shown_path, split_pin

if TYPE_CHECKING:
    import pandas as pd

    from ..bench.bench import Bench
    from ..bench.result import CallResult

#: the flags are the open() option table's (ctx/spec.py rows), as `gem-workbench call` takes them
_OPEN_USAGE = usage("%gem open PATH")
_STATE_ARGS = {"data": " NAME", "sql": " QUERY", "history": " [PATH]"}  # the views that take one


class MagicError(WorkbenchError):
    """A magic could not do what it was asked; reported as the one line `error CODE: message`."""


def _usage(message: str) -> MagicError:
    return MagicError("E_USAGE", message)


def _reported(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn every failure of a magic into a MagicError (internal bugs: E_INTERNAL)."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except MagicError:
            raise
        except WorkbenchError as exc:
            raise MagicError(exc.code, exc.message, **exc.details) from exc
        except Exception as exc:
            raise MagicError(
                "E_INTERNAL",
                f"{type(exc).__name__}: {exc} (a workbench bug: %tb shows the traceback; please report it)",
            ) from exc

    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    wrapper.__wrapped__ = method  # type: ignore[attr-defined]
    return wrapper


# -- the INPUT rule ------------------------------------------------------------------------
def _evaluate(expr: str | CodeType, namespace: dict[str, Any], what: str) -> Any:
    try:
        return eval(expr, namespace)  # noqa: S307 - the user's own notebook expression
    except Exception as exc:
        raise _usage(f"{what}: {type(exc).__name__}: {exc}") from None


def _substitute(value: Any, namespace: dict[str, Any]) -> Any:
    """Replace every `$expr` string value by the expression's value (`$$` is a literal `$`)."""
    if isinstance(value, str) and value.startswith("$"):
        if value.startswith("$$"):
            return value[1:]
        return _evaluate(value[1:], namespace, f"{value!r} in the input")
    if isinstance(value, dict):
        return {k: _substitute(v, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, namespace) for v in value]
    return value


@functools.cache
def _yaml_loader() -> Any:
    """PyYAML's safe loader with JSON's scalars (as in YAML 1.2): only true/false are booleans
    (`no`, `on` stay strings), no dates or times, no octal or base-60 numbers, `1e5` is a
    number. A tool input is JSON, so YAML 1.1's extra types would only surprise."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    replaced = {
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
    }
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in replaced]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:int", re.compile(r"^-?(?:0|[1-9][0-9]*)$"), list("-0123456789")
    )
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^-?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$"),
        list("-0123456789."),
    )
    return Loader


def parse_input(text: str, namespace: dict[str, Any]) -> Any:
    """The tool input that a `%tool` line or `%%tool` cell gives (the INPUT rule above)."""
    if not text.strip():
        return {}
    try:
        return _substitute(json.loads(text), namespace)
    except ValueError:
        pass
    import yaml

    yaml_problem: str | None = None
    try:
        value = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        yaml_problem = f"{getattr(exc, 'problem', None) or exc}{where}"
    else:
        if not isinstance(value, str) or value.startswith("$"):
            return _substitute(value, namespace)
    try:
        code = compile(text.strip(), "<tool input>", "eval")
    except SyntaxError as exc:
        why = f"YAML: {yaml_problem}" if yaml_problem else "a bare word to YAML"
        raise _usage(
            f"the input is not JSON, YAML or a Python expression ({why}; Python: "
            f"{exc.msg}); for a string field write YAML, e.g. `title: buy milk`"
        ) from None
    return _evaluate(code, namespace, "the input, evaluated as a Python expression")


# -- the magics ----------------------------------------------------------------------------
@magics_class
class WorkbenchMagics(Magics):
    """`%gem`, `%tool` and `%state`, sharing the bench `%gem open` opened."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        self.opened: Bench | None = None

    @property
    def ns(self) -> dict[str, Any]:
        """The notebook's namespace."""
        if self.shell is None:
            raise _usage("the workbench magics need an IPython shell")
        return self.shell.user_ns

    @property
    def bench(self) -> Bench:
        """The bench `%tool` and `%state` act on: the notebook's `bench`, else the opened one."""
        from ..bench.bench import Bench

        candidate = self.ns.get("bench")
        bench = candidate if isinstance(candidate, Bench) else self.opened
        if bench is None:
            raise _usage("no bench is open: run `%gem open PATH` first")
        if bench.closed:
            raise _usage(f"the bench of {bench.manifest.id} is closed: `%gem open` it again")
        return bench

    # %gem ----------------------------------------------------------------------------------
    @line_magic
    @_reported
    def gem(self, line: str) -> Bench | None:
        """%gem open PATH [FLAG …] | %gem | %gem close (the flags: below)"""
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise _usage(f"%gem {line}: {exc}") from None
        if not args:
            return self.bench
        if args[0] == "open":
            self._open(args[1:])
            return None
        if args[0] == "close" and len(args) == 1:
            self._close()
            return None
        raise _usage(f"%gem {line.strip()}: use `{_OPEN_USAGE}`, `%gem` or `%gem close`")

    def _open(self, args: list[str]) -> None:
        from IPython.display import display

        from ..bench.open import open as open_bench
        from ..bench.options import FlagParser, add_flags, apply_actions, gem_profile, taken

        parser = FlagParser(prog="%gem open", add_help=False, allow_abbrev=False)
        parser.add_argument("path", nargs="?")
        add_flags(parser)  # every platform's: the gem's platform refuses those it lacks, below
        try:
            ns, extra = parser.parse_known_args(args)
        except WorkbenchError as exc:
            raise _usage(f"{exc.message}: {_OPEN_USAGE}") from None
        for arg in extra:
            if arg.startswith("-"):
                raise _usage(f"unknown option {arg}: {_OPEN_USAGE}")
            raise _usage(f"one gem folder at a time (got {ns.path!r} and {arg!r}): {_OPEN_USAGE}")
        path = vars(ns).pop("path")
        if path is None:
            raise _usage(f"which gem? {_OPEN_USAGE}")
        path = os.path.expanduser(path)
        options, actions = taken(ns, gem_profile(path))
        bench = open_bench(path, **options)
        try:  # --allow-recipient, --allow-account: on the bench before anything else
            apply_actions(bench, actions)
        except BaseException:
            bench.close()
            raise
        previous, self.opened = self.opened, bench
        if previous is not None:
            previous.close()
        self.ns["bench"] = bench
        display(bench)

    def _close(self) -> None:
        bench = self.bench
        bench.close()
        if self.opened is bench:
            self.opened = None
        if self.ns.get("bench") is bench:
            del self.ns["bench"]
        print(f"closed {bench.manifest.id}")

    # %tool / %%tool ------------------------------------------------------------------------
    @no_var_expand
    @line_cell_magic
    @_reported
    def tool(self, line: str, cell: str | None = None) -> CallResult | Any:
        """%tool NAME INPUT [--pin CASE], or %%tool NAME [--pin CASE] with the INPUT as the
        cell: call a tool (and pin the call as tests/calls/NAME/CASE.json of the gem).
        %tool NAME with no input: the tool's form (`bench.form(NAME)`); `%tool NAME {}` calls
        it with an empty object."""
        name, _, rest = line.strip().partition(" ")
        if not name:
            raise _usage("which tool? `%tool NAME {json}` or `%%tool NAME` with the input below")
        rest, case, flagged = split_pin(rest)
        if cell is not None and rest.strip():
            raise _usage(
                f"%%tool takes only the tool name and `--pin CASE` on its line (got "
                f"{rest.strip()!r}); the input is the cell body"
            )
        if flagged and not case:
            raise _usage(f"--pin CASE: name the case, e.g. `%tool {name} {{}} --pin first`")
        bench = self.bench
        if bench.manifest.tool(name) is None:
            raise MagicError(
                "E_UNKNOWN_TOOL",
                bench.manifest.no_tool(name),
                tool=name,
            )
        if cell is None and not rest.strip():  # nothing to call with yet: ask for it
            if case:
                raise _usage(f"--pin {case}: give the input to call with (`{{}}` for an empty one)")
            return bench.form(name)
        if case:  # a name that cannot be a file name is refused before the call, not after
            from ..pins.case import case_path

            case_path(bench.manifest.root, name, case)
        args = parse_input(rest if cell is None else cell, self.ns)
        res = bench.call(name, args)
        if case:
            self._pin(res, case)
        if res.error is not None and os.environ.get("GEM_WORKBENCH_TOOL_ERRORS") == "fail":
            # notebook tests that opted in (gem-workbench test --nb-tool-errors=fail): a failed
            # call fails its cell, after showing the result
            from IPython.display import display

            display(res)
            raise MagicError(res.error.code, f"%tool {name} failed: {res.error.message}", tool=name)
        return res

    @staticmethod
    def _pin(res: CallResult, case: str) -> None:
        """Pin `res` and say where; if that fails, the result is still shown, then the error."""
        try:
            path = res.pin(case)
        except WorkbenchError:
            from IPython.display import display

            display(res)
            raise
        print(f"pinned: {shown_path(path)}")

    # %state / %%state ----------------------------------------------------------------------
    @no_var_expand
    @line_cell_magic
    @_reported
    def state(self, line: str, cell: str | None = None) -> pd.DataFrame:
        """%state VIEW: a view of the bench's platform as a DataFrame (files, kv, calls, tools,
        outbox, audit, …; data NAME, sql QUERY, history [PATH])."""
        what, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if cell is not None:
            rest = f"{rest}\n{cell}".strip()
        bench = self.bench
        from ..bench.views import platform_tables

        tables = platform_tables(bench.profile)  # its platform's views, a plugin capability's too
        if what not in tables and what.isidentifier() and not what.startswith("_"):
            try:  # another platform's view: the AttributeError names the platform that has it
                getattr(bench, what)
            except AttributeError as exc:
                raise _usage(f"%state {what}: {exc}") from None
        if what == "data" and rest and len(rest.split()) == 1:
            return bench.data(rest)
        if what == "data":
            raise _usage(
                f"%state data NAME: one collection name (declared: "
                f"{', '.join(bench.manifest.collections) or 'none'})"
            )
        if what == "sql" and rest:
            return bench.sql(rest)
        if what == "history":
            return bench.history(rest or None)
        if what in tables and what != "sql" and not rest:
            return getattr(bench, what)()
        usage = " | ".join(n + _STATE_ARGS.get(n, "") for n in tables)
        raise _usage(f"%state {line.strip()}: use `%state {usage}`")


def _gem_doc() -> str:
    from ..bench.options import flags_text

    return (
        f"{_OPEN_USAGE} | %gem | %gem close\n\n"
        "`%gem open` opens a gem as workbench.open does and binds it to `bench`; its flags are\n"
        "the open() options' (a gem's platform refuses another's, naming it):\n\n" + flags_text()
    )


WorkbenchMagics.gem.__doc__ = _gem_doc()


# -- registration ---------------------------------------------------------------------------
def _report(error: MagicError) -> None:
    print(f"error {error.code}: {error.message}", file=sys.stderr)
    cause = error.__cause__
    if error.code == "E_INTERNAL" and cause is not None:  # so %tb and %debug find the bug
        sys.last_type, sys.last_value, sys.last_traceback = type(cause), cause, cause.__traceback__


def _install_reporter(shell: Any) -> None:
    """Show MagicErrors as one line (and fail the cell) instead of a traceback."""
    if MagicError in shell.custom_exceptions:
        return
    kept, previous = shell.custom_exceptions, shell.CustomTB

    def handler(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> Any:
        if isinstance(value, MagicError):
            _report(value)
            return None
        return previous(etype, value, tb, tb_offset=tb_offset)

    shell.set_custom_exc((*kept, MagicError), handler)


def register(shell: Any) -> None:
    """Register the magics on an IPython shell (once; loading again keeps the open bench)."""
    if shell is None:
        raise WorkbenchError(
            "E_USAGE",
            "the workbench magics need IPython: use `%load_ext workbench` in a notebook or IPython session",
        )
    if "WorkbenchMagics" not in shell.magics_manager.registry:
        shell.register_magics(WorkbenchMagics)
    from .complete import install

    install(shell)  # Tab after %tool, %state, %gem open and in bench.call('…
    _install_reporter(shell)
