"""The `open()` option table as each surface shows it: `workbench.open`'s checks, defaults and
docstring, the `gem-workbench call`/`check` flags, `%gem open`'s flags and docs/open.md's table.

The rows are the capabilities' (ctx/spec.py, one `SPEC` beside each capability's rules;
`ctx.specs()` is the registry, plugins' included); a platform takes the options of the capabilities it has. Nothing
here names a platform or an option: a capability added to the registry shows up on every
surface, and a platform that lacks it refuses it naming the platform that has it.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from .._errors import UsageError, in_command_line
from ..ctx import specs as _every_spec
from ..ctx import specs_of
from ..ctx.spec import (
    BENCH,
    Action,
    CapabilitySpec,
    Flag,
    Option,
    json_file,
    options_for,
    unknown_option,
)

if TYPE_CHECKING:
    from ..platforms import Profile

__all__ = [
    "FlagParser",
    "add_flags",
    "apply_actions",
    "every_option",
    "flag_value",
    "flags_text",
    "gem_flags",
    "gem_options",
    "gem_profile",
    "open_doc",
    "with_options",
    "options_markdown",
    "platforms_of",
    "profiles",
    "resolve",
    "table",
    "taken",
    "usage",
]


def profiles(*, loaded_only: bool = False) -> list[Profile]:
    """Every platform the workbench runs (`loaded_only`: plugins only if already read)."""
    from ..platforms import profiles as every

    return every(loaded_only=loaded_only)


def specs(*, loaded_only: bool = False) -> list[CapabilitySpec]:
    """Every capability's spec, in the registry's order (plugins' last: ctx/registry.py;
    `loaded_only`: only if already read)."""
    return _every_spec(loaded_only=loaded_only)


def table(profile: Profile) -> dict[str, tuple[Option, CapabilitySpec]]:
    """{option: (row, its capability)} that `profile`'s benches take."""
    return options_for(profile, specs_of(profile))


def gem_profile(path: Any) -> Profile:
    """The platform of the gem at `path`, as `workbench.open` detects it (GemLoadError saying
    why when no gem is there)."""
    from .._check import gem_folder
    from .._errors import GemLoadError
    from ..bundles.export import is_bundle
    from ..platforms import detect

    if is_bundle(path):  # a repro bundle: the platform its bundle.json names (E_BUNDLE)
        from ..bundles.read import bundle_platform
        from ..platforms import profile

        return profile(bundle_platform(path))
    folder, why = gem_folder(path)
    if folder is None:
        raise GemLoadError(why, file=str(path))
    return detect(folder)


def gem_options(path: Any) -> dict[str, tuple[Option, CapabilitySpec]]:
    """The option table of the gem at `path`'s platform ({} when no gem is there)."""
    from .._errors import GemLoadError

    try:
        return table(gem_profile(path))
    except GemLoadError:
        return {}


def gem_flags(path: Any = None) -> list[str]:
    """The flags (options' and actions') a gem at `path` takes: its platform's, or every
    platform's when `path` is None or no gem (for `%gem open` completion)."""
    from .._errors import GemLoadError

    try:
        profile = gem_profile(path) if path is not None else None
    except GemLoadError:
        profile = None
    if profile is None:
        return [*_flags(), *_actions()]
    mine, have = table(profile), [s.impl for s in specs_of(profile)]
    return [
        *(f for f, (_, o) in _flags().items() if o.name in mine),
        *(f for f, (_, s) in _actions().items() if s.impl in have),
    ]


def usage(head: str) -> str:
    """A one-line usage: `head`, every bench's flags, then where the platforms' flags are."""
    flags = " ".join(f"[{_spelled(f)}]" for o in BENCH.options for f in o.flags)
    return f"{head} {flags} [FLAG …]"


def every_option(*, loaded_only: bool = False) -> dict[str, tuple[Option, CapabilitySpec]]:
    """Every capability's options, opt-in ones included, in the table's order."""
    out: dict[str, tuple[Option, CapabilitySpec]] = {}
    for spec in (BENCH, *specs(loaded_only=loaded_only)):
        for o in spec.options:
            out.setdefault(o.name, (o, spec))
    return out


def platforms_of(option: str, *, loaded_only: bool = False) -> list[Profile]:
    """The platforms whose benches take `option`."""
    return [p for p in profiles(loaded_only=loaded_only) if option in table(p)]


def _having(spec: CapabilitySpec) -> list[Profile]:
    return [p for p in profiles() if any(s is spec for s in specs_of(p))]


def _titles(found: list[Profile], *, loaded_only: bool = False) -> str:
    every = len(profiles(loaded_only=loaded_only))
    return "every platform" if len(found) == every else ", ".join(p.title for p in found)


# -- workbench.open ---------------------------------------------------------------------------
def resolve(profile: Profile, given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option's value for a bench of `profile`: each given one checked against the
    platform's table (another platform's: `unknown_option`) and by its row's check, the rest
    the table's defaults; an option that is another name of one (`same_as`) given under it.
    Another platform's options are absent, not None: nothing can read them by mistake."""
    mine = table(profile)
    for name in given:
        if name not in mine:
            raise unknown_option(name, profile, specs(), profiles())
    for name, value in given.items():
        if (check := mine[name][0].check) is not None:
            try:
                check(value)
            except UsageError as exc:
                raise _in_flags(exc, mine[name][0]) from None
    values = {name: o.default for name, (o, _) in mine.items()}  # this platform's only
    values.update(given)
    for name, value in given.items():
        target = mine[name][0].same_as
        if target is None or value is None:
            continue
        if target in given and given[target] != mine[target][0].default:
            raise UsageError(f"give {name}= or {target}=, not both (they are the same option)")
        values[target] = list(value) if isinstance(value, tuple) else value  # handlers: a list
    return values


def _in_flags(exc: UsageError, o: Option) -> UsageError:
    """An option's refused value in the words of the command line when it runs one: its
    "reuse='x': …" as "--reuse 'x': …" (the flag that gave it)."""
    lead = f"{o.name}="
    if not (in_command_line() and o.flags and exc.message.startswith(lead)):
        return exc
    flag = o.flags[0].flag
    return UsageError(f"{flag} {exc.message[len(lead) :]}", **{**exc.details, "flag": flag})


def _default(o: Option) -> str:
    return o.default_doc if o.default_doc is not None else repr(o.default)


def open_doc(*, loaded_only: bool = False) -> str:
    """The options part of `help(workbench.open)`: one entry per option of every platform
    (`loaded_only`: the plugins' only if something read them already)."""
    lines = []
    for name, (o, _) in every_option(loaded_only=loaded_only).items():
        found = platforms_of(name, loaded_only=loaded_only)
        lines.append(f"{name}: {o.type} = {_default(o)}  [{_titles(found, loaded_only=loaded_only)}]")
        text = o.doc + (f"; {o.more}" if o.more else "")
        lines.append(textwrap.fill(f"{text}.", width=96, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)


def options_markdown() -> str:
    """docs/open.md's options table (tests/test_open_options.py compares the page with it)."""
    rows = [
        "| option | type | default | platforms | what it is |",
        "|---|---|---|---|---|",
    ]
    for name, (o, _) in every_option().items():
        flags = ", ".join(f"`{f.flag}`" for f in o.flags)
        text = o.doc + (f"; {o.more}" if o.more else "") + (f" (CLI: {flags})" if flags else "")
        cells = [f"`{name}`", _md(o.type), _md(_default(o)), _titles(platforms_of(name)), _md(text)]
        rows.append("| " + " | ".join(cells) + " |")
    actions = [(a, s) for s in specs() for a in s.actions]
    if actions:
        rows += ["", "| flag | platforms | what it does |", "|---|---|---|"]
        for a, s in actions:
            rows.append(f"| `{a.flag} {a.metavar}` | {_titles(_having(s))} | {_md(a.help)} |")
    return "\n".join(rows) + "\n"


#: where docs/open.md's generated table starts and ends
MARKS = (
    "<!-- options: generated from the capabilities' option table "
    "(workbench.bench.options.options_markdown()); tests/test_open_options.py checks it -->\n",
    "<!-- /options -->\n",
)


def with_options(page: str) -> str:
    """`page` (docs/open.md's text) with the table between MARKS made again."""
    start, end = page.index(MARKS[0]) + len(MARKS[0]), page.index(MARKS[1])
    return page[:start] + options_markdown() + page[end:]


def _md(text: str) -> str:
    # a default such as <gem id> would be an HTML tag to Markdown
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


# -- command-line flags (gem-workbench call/check, %gem open) ---------------------------------
_OPT, _ACT = "opt\x1f", "act\x1f"  # argparse dests: opt<US>option<US>flag, act<US>flag


def _flags() -> dict[str, tuple[Flag, Option]]:
    return {f.flag: (f, o) for o, _ in every_option().values() for f in o.flags}


def _actions() -> dict[str, tuple[Action, CapabilitySpec]]:
    return {a.flag: (a, s) for s in specs() for a in s.actions}


def flag_value(flag: str) -> str | None:
    """The metavar of the value `flag` takes (`--state-dir`: "DIR"), or None when it takes
    none or is no flag of the table (for completion: what follows it is that value)."""
    if (row := _flags().get(flag)) is not None:
        return None if row[0].how in ("const", "optional") else row[0].metavar or "VALUE"
    action = _actions().get(flag)
    return action[0].metavar if action is not None else None


def add_flags(parser: argparse.ArgumentParser, *, skip: Iterable[str] = ()) -> None:
    """Every platform's option flags and actions on `parser`, grouped by capability with the
    platforms that have it (the gem's platform is known only once its path is read: `taken`
    refuses the flags it lacks). `skip`: flags the command defines itself."""
    skipped = set(skip)
    for spec in (BENCH, *specs()):
        rows = [(o, f) for o in spec.options for f in o.flags if f.flag not in skipped]
        acts = [a for a in spec.actions if a.flag not in skipped]
        if not rows and not acts:
            continue
        having = _having(spec)
        group = parser.add_argument_group(f"{spec.title} ({_titles(having)})")
        for o, f in rows:
            only = platforms_of(o.name)
            note = f" [{_titles(only)} only]" if len(only) < len(having) else ""
            dest = f"{_OPT}{o.name}\x1f{f.flag}"
            kw: dict[str, Any] = {"dest": dest, "default": argparse.SUPPRESS, "help": f"{f.help}{note}"}
            if f.how == "const":
                group.add_argument(f.flag, action="store_const", const=f.const, **kw)
            elif f.how == "optional":  # --flag alone, or --flag=VALUE
                group.add_argument(f.flag, nargs="?", const=f.const, metavar=f.metavar or "VALUE", **kw)
            else:
                action = "append" if f.how in ("pair", "append") else "store"
                group.add_argument(f.flag, action=action, metavar=f.metavar or "VALUE", **kw)
        for a in acts:
            group.add_argument(
                a.flag,
                action="append",
                metavar=a.metavar,
                dest=f"{_ACT}{a.flag}",
                default=argparse.SUPPRESS,
                help=a.help,
            )


def flags_text() -> str:
    """Every flag, grouped by capability with its platforms (the `%gem` magic's help)."""
    lines = []
    for spec in (BENCH, *specs()):
        flags = [(_spelled(f), f.help) for o in spec.options for f in o.flags]
        flags += [(f"{a.flag} {a.metavar}", a.help) for a in spec.actions]
        if flags:
            lines.append(f"{spec.title} ({_titles(_having(spec))}):")
            lines += [f"    {flag:<26} {help}" for flag, help in flags]
    return "\n".join(lines)


def _spelled(f: Flag) -> str:
    """A flag as help texts show it: `--timeout S`, `--no-pins`, `--inspect[=wait]`."""
    if f.how == "const":
        return f.flag
    if f.how == "optional":
        return f"{f.flag}[={f.metavar or 'VALUE'}]"
    return f"{f.flag} {f.metavar or 'VALUE'}"


def _flag_error(flag: str, option: str, profile: Profile) -> UsageError:
    """unknown_option's message, in the words of the command line."""
    err = unknown_option(option, profile, specs(), profiles())
    message = err.message.replace(f"{option}= is", f"{flag} ({option}=) is", 1)
    message = message.replace(f"open() has no option {option}=", f"there is no {flag} ({option}=)", 1)
    near = err.details.get("suggest")
    if near and (row := every_option().get(near)) and row[0].flags:
        message = message.replace(f"did you mean {near}=?", f"did you mean {row[0].flags[0].flag}?")
    return UsageError(message, flag=flag, **err.details)


def taken(
    ns: argparse.Namespace | Mapping[str, Any], profile: Profile
) -> tuple[dict[str, Any], list[tuple[Action, list[str]]]]:
    """The open() options and bench actions the flags in `ns` give, for a gem of `profile`: a
    flag of an option or capability the platform lacks is refused (the platform that has it
    named), before any flag's file is read."""
    given = vars(ns) if isinstance(ns, argparse.Namespace) else dict(ns)
    flags, acts = _flags(), _actions()
    mine = table(profile)
    have = {s.impl for s in specs_of(profile)}
    raw: list[tuple[Flag, Option, Any]] = []
    actions: list[tuple[Action, list[str]]] = []
    for key, value in given.items():
        if key.startswith(_OPT):
            _, name, flag = key.split("\x1f", 2)
            if name not in mine:
                raise _flag_error(flag, name, profile)
            raw.append((*flags[flag], value))
        elif key.startswith(_ACT):
            action, spec = acts[key[len(_ACT) :]]
            if spec.impl not in have:
                where = ", ".join(f"{p.title} ({spec.title})" for p in _having(spec))
                raise UsageError(
                    f"{action.flag} is a flag of {where}; {profile.title} do not have it",
                    flag=action.flag,
                    platform=profile.name,
                    platforms=[p.name for p in _having(spec)],
                )
            actions.append((action, list(value)))
    options: dict[str, Any] = {}
    by: dict[str, str] = {}
    for f, o, value in raw:
        got = _value(f, value)
        if o.name in options:
            if not (isinstance(got, dict) and isinstance(options[o.name], dict)):
                raise UsageError(f"give {by[o.name]} or {f.flag}, not both")
            got = {**options[o.name], **got}
        options[o.name], by[o.name] = got, f.flag
    return options, actions


def _value(f: Flag, value: Any) -> Any:
    if f.how == "const" or (f.how == "optional" and value is f.const):
        return value
    if f.how == "pair":
        out = {}
        for text in value:
            name, eq, val = text.partition("=")
            if not eq or not name:
                raise UsageError(f"{f.flag} {text!r}: give {f.metavar or 'NAME=VALUE'}", flag=f.flag)
            out[name] = f.parse(val) if f.parse else val
        return out
    if f.how == "append":
        return [f.parse(v) if f.parse else v for v in value]
    if f.how == "json":
        return json_file(value)
    return f.parse(value) if f.parse else value


def apply_actions(bench: Any, actions: list[tuple[Action, list[str]]]) -> None:
    """Run the bench actions the flags gave (e.g. --allow-recipient), in the table's order."""
    for action, values in actions:
        action.apply(bench, values)


class FlagParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are E_USAGE (for `%gem open`: no SystemExit)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
