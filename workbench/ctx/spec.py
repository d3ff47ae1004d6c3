"""What a capability declares beyond its ctx shape: its `open()` options, its backend factory,
its per-call state, its bench views and actions (Miniflare's plugin shape: one row each).

Each capability module keeps its `SPEC` beside its rules; `ctx.SPECS` is the registry. Every
surface an author touches — `workbench.open`'s keywords and docstring, the `gem-workbench
call`/`check` flags, `%gem open`'s options, docs/open.md's table, a bench's views — is read
from these rows and the detected platform's capabilities, so a capability added once shows up
everywhere and a platform that lacks it says so in its own words.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import GemLoadError, UsageError
from .bench_state import BENCH_PART
from .parts import Effect, StatePart

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from ._session import CallSession

__all__ = [
    "Action",
    "backend_of",
    "CapabilitySpec",
    "Flag",
    "OpenContext",
    "Option",
    "View",
    "foreign_view",
    "views_for",
]

JSON_FILE_BYTES = 64 * 1024 * 1024  # of a flag's JSON file (fixtures, secrets, records)


@dataclass(frozen=True)
class Flag:
    """One command-line spelling of an option (for `gem-workbench call`/`check`, `%gem open`).

    how: "value" (the text, parsed by `parse`), "json" (a JSON file's content), "pair"
    (NAME=VALUE, repeatable, into a dict), "append" (repeatable, into a list), "const" (no
    argument: the option is `const`), "optional" (`--flag` alone is `const`, `--flag=VALUE`
    the value, parsed by `parse`).
    """

    flag: str
    how: Literal["value", "json", "pair", "append", "const", "optional"] = "value"
    metavar: str | None = None
    help: str = ""
    const: Any = True
    parse: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Option:
    """One keyword of `workbench.open`, owned by one capability (or generic)."""

    name: str
    doc: str  # one line: what it is (shown by help(), docs/open.md, the CLI)
    default: Any = None
    type: str = "Any"  # its annotation as text, for help() and the docs
    default_doc: str | None = None  # the default as the docs say it (when not repr(default))
    flags: tuple[Flag, ...] = ()
    check: Callable[[Any], None] | None = None  # raises UsageError before anything opens
    # offered only by platforms that list it in Profile.open_options (e.g. Ekanos'
    # fetch_handlers=, createMockContext's name for the http option)
    opt_in: bool = False
    same_as: str | None = None  # the option it is another name of (fetch_handlers: http)
    more: str = ""  # what help(open) and docs/open.md add after `doc` (details, rule ids)


@dataclass(frozen=True)
class View:
    """One bench view or action: `bench.<name>(...)`. `fn(bench, *args)`, or None when the
    Bench implements it (the built-ins); either way only a bench whose platform has the
    capability lists and answers it."""

    name: str
    doc: str = ""
    fn: Callable[..., Any] | None = None
    # a DataFrame of state (`%state NAME` shows it); False: an action or an object
    table: bool = True


@dataclass(frozen=True)
class Action:
    """A command-line flag that acts on the opened bench before the call (e.g.
    `--allow-recipient ADDR` runs `bench.allow_recipients(ADDR)`)."""

    flag: str
    metavar: str
    help: str
    apply: Callable[[Any, list[str]], None]  # (bench, the values given, in order)
    # the same act as a notebook writes it, "{}" where the values go (ctx/surface.py: a hint
    # names the flag on the command line, this in Python), and the placeholder for "some values"
    python: str = ""
    python_values: str = "…"


@dataclass
class OpenContext:
    """What a backend factory sees while a bench opens."""

    manifest: Manifest
    profile: Profile
    limits: Limits
    options: Mapping[str, Any]  # every option of the bench, defaults filled in
    kinds: Mapping[str, str]  # "mock" | "real" per provider kind (providers=)
    state_dir: Path  # the bench's state folder (made or not)
    backends: dict[str, Any] = field(default_factory=dict)  # those made so far, by capability


@dataclass(frozen=True)
class CapabilitySpec:
    """One capability as a unit: its rules live in its module; this is the rest."""

    impl: str  # the ctx.IMPLEMENTATIONS key the platforms' rows name
    title: str  # how an author calls it: "ctx.email", "ctx.tools (web_search, …)"
    options: tuple[Option, ...] = ()
    # its backend: made at open (after the shared stores), stored in providers.backends[impl];
    # None: it uses the shared stores only
    backend: Callable[[OpenContext], Any] | None = None
    # its per-call state, made from the session at the capability's first use in a call
    # (session.of(impl)); it may define nested() (its state in a nested invocation: default the
    # same object) and into(res) (what it puts on the call's result)
    call_state: Callable[[CallSession], Any] | None = None
    views: tuple[View, ...] = ()
    actions: tuple[Action, ...] = ()
    # reads the gem's own fixtures of it (gem root) as its backend does when no option names
    # others, raising the providers' error: `gem-workbench check` reports them before a call
    fixtures: Callable[[Path], object] | None = None
    close: Callable[[Any], None] | None = None  # releases its backend when the bench closes
    # what a call of it that returned (did not raise) says went wrong, for its trace row: an
    # error envelope, an HTTP status >= 400; (method, result) -> a line, or None: nothing
    notice: Callable[[str, Any], str | None] | None = None
    # the ctx class a call's `Capabilities` makes for it (ctx.IMPLEMENTATIONS is read from the
    # specs); None: a per-call value or a capability served by another's class
    implementation: type | None = None
    # the other impl names this row covers (kv and sql share storage.py; the values.* rows)
    covers: tuple[str, ...] = ()
    # the provider kinds (`providers=`: "files", "storage") its state lives on: a bench's
    # header lists only the kinds its platform's capabilities use
    provider_kinds: tuple[str, ...] = ()
    # which of its methods read from or send outside the bench's state (a mailbox, a built-in
    # tool): a pinned call's replay serves their recorded results back (ctx/served.py)
    replayed: Callable[[str], bool] | None = None
    # which of its options make its backend act outside the bench for real (mail a server
    # accepts, a request a server answers): `real_effects(backend)` names them ("outbox=", …);
    # the doctor, which calls tools thousands of times, refuses a bench where any does
    real_effects: Callable[[Any], tuple[str, ...]] | None = None
    # the parts of the bench's state it owns (ctx/parts.py): snapshots, diffs, state folders,
    # pins, bundles, crash reruns and the doctor take them in through ctx/state.py
    state: tuple[StatePart, ...] = ()
    # its methods that act outside the bench (mail sent, a POST): what a crash rerun must not
    # do again (N7)
    effects: tuple[Effect, ...] = ()


def backend_of(providers: Any, spec: CapabilitySpec) -> Any:
    """The backend `spec`'s capability made for the bench of `providers` (None: the bench's
    platform lacks it): the Face reaches a backend by its capability's spec, never by a name."""
    return providers.backends.get(spec.impl)


# -- parsing helpers for flags -------------------------------------------------------------
def number(kind: type, *, what: str) -> Callable[[str], Any]:
    """A flag's argument as an int or a float (E_USAGE saying what it should be)."""

    def parse(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise UsageError(f"{text!r} is not {what}") from None

    return parse


def path_or(*words: str) -> Callable[[str], Any]:
    """A flag's argument kept as text when it is one of `words` (e.g. "real"), else a path."""

    def parse(text: str) -> Any:
        return text if text in words else str(Path(text).expanduser())

    return parse


def file_or(*words: str) -> Callable[[str], Any]:
    """A flag's argument kept as text when it is one of `words` or a URL, else a JSON file."""

    def parse(text: str) -> Any:
        if text in words or text.startswith(("http://", "https://")):
            return text
        return json_file(text)

    return parse


def json_file(text: str) -> Any:
    """A flag's FILE argument read as JSON, through the gem reader's bounded, non-blocking read
    of a regular file (a FIFO or a directory is an error, never a hang); E_USAGE naming the
    file when it cannot be read or is not JSON."""
    from ..gem.folder import read_file

    try:
        data = read_file(Path(text).expanduser(), JSON_FILE_BYTES)
    except GemLoadError as exc:
        raise UsageError(exc.message, **exc.details) from None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{text} is not JSON: {exc}", file=text) from None


def checked(test: Callable[[Any], bool], message: str) -> Callable[[Any], None]:
    """An Option.check: E_USAGE `message` (formatted with {value!r}) unless `test(value)`."""

    def check(value: Any) -> None:
        if not test(value):
            raise UsageError(message.format(value=value))

    return check


def _inspect_flag(text: str) -> Any:
    """--inspect's value: only "wait" (`--inspect` alone is True)."""
    if text != "wait":
        raise UsageError(f"--inspect={text!r}: give --inspect or --inspect=wait", flag="--inspect")
    return text


def _instant(value: Any) -> None:
    from .clock import parse_instant

    parse_instant(value)  # E_USAGE naming the value


def _real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def seconds(value: Any) -> bool:
    """A positive number of seconds (not a bool)."""
    return _real(value) and value > 0


def closest(name: str, names: Iterable[str]) -> str | None:
    """The nearest of `names` to a misspelled `name`, if any is near."""
    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return found[0] if found else None


#: what every bench takes, whatever its platform (the call's sandbox, state, rules, bounds)
BENCH = CapabilitySpec(
    impl="",
    title="every bench",
    state=(BENCH_PART,),
    options=(
        Option(
            "providers",
            "'mock', 'real', or per provider kind, e.g. {'files': 'real', 'storage': 'mock'}",
            default="mock",
            type="str | dict[str, str]",
            flags=(Flag("--real", how="const", const="real", help="real providers instead of mocks"),),
        ),
        Option(
            "state_dir",
            "where real SQLite state and run folders live",
            type="str | os.PathLike[str] | None",
            default_doc="<gem id>-<hash of its path> under $GEM_WORKBENCH_HOME or ~/.local/state/gem-workbench",
            flags=(Flag("--state-dir", metavar="DIR", help="where real state lives", parse=path_or()),),
        ),
        Option(
            "strict",
            "platform rules the platform itself does not check (D4) become errors",
            default=False,
            type="bool",
            flags=(Flag("--strict", how="const", help="rules the platform does not check become errors"),),
        ),
        Option(
            "reuse",
            "whether a call reuses the tool's module instance from the previous call (N5): "
            "'always', 'never' or 'random'",
            default="always",
            type="Literal['always', 'never', 'random']",
            flags=(Flag("--reuse", metavar="MODE", help="always | never | random (N5)"),),
            check=checked(
                lambda v: v in ("always", "never", "random"),
                "reuse={value!r}: use 'always', 'never' or 'random'",
            ),
            more="'random' flushes out tools that keep state in memory, which the platform does not promise to keep",
        ),
        Option(
            "timeout",
            "per-call wall clock in seconds; it also bounds every ctx call (SEC5)",
            default=30.0,
            type="float",
            more="a ctx call still running at the deadline is stopped with E_TIMEOUT, none starts after "
            "it, Python tools included",
            flags=(
                Flag("--timeout", metavar="S", help="per-call seconds", parse=number(float, what="seconds")),
            ),
        ),
        Option(
            "seed",
            "makes the bench's call ids, idempotency keys, run folder names and each call's seed "
            "(the sandbox's Math.random and crypto draws) reproducible",
            type="int | None",
            default=None,
            check=checked(
                lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
                "seed={value!r}: give a whole number or None",
            ),
            more="None: random, as before; with a frozen clock two benches given the same seed and "
            "calls give identical ids and timestamps (docs/clock.md)",
            flags=(
                Flag(
                    "--seed",
                    metavar="N",
                    help="reproducible ids and draws",
                    parse=number(int, what="a whole number"),
                ),
            ),
        ),
        Option(
            "pins",
            "whether each call copies each part of the state it reaches (the conversation folder, a "
            "collection, kv, a table) as it first reaches it, so `res.pin(name)` can save it as a regression case",
            default=True,
            type="bool",
            more="the copy costs in proportion to what the call reaches (docs/benchmarks.md); False skips "
            "it (a bench that never pins); docs/pins.md",
            flags=(
                Flag("--no-pins", how="const", const=False, help="calls cannot be pinned (skips a copy)"),
            ),
        ),
        Option(
            "clock",
            "the bench's clock frozen at this time: a datetime, an ISO 8601 text or epoch seconds",
            type="datetime | str | float | None",
            default=None,
            check=lambda v: None if v is None else _instant(v),
            more="None: the wall clock; `bench.clock` freezes, advances, sets and releases it later (docs/clock.md)",
            flags=(Flag("--clock", metavar="WHEN", help="freeze the clock at WHEN (ISO 8601)"),),
        ),
        Option(
            "state",
            "a state folder written by `bench.export_state(DIR)`: the bench starts from its "
            "state (conversation folder, kv, documents, SQL rows, mock mail) instead of the gem's fixtures",
            type="str | os.PathLike[str] | None",
            default=None,
            more="mock providers only; every entry is checked (no link inside, paths within the "
            "conversation folder, declared collections, existing tables); docs/bundles.md",
            flags=(
                Flag(
                    "--state-from",
                    metavar="DIR",
                    help="start from a state folder (bench.export_state)",
                    parse=path_or(),
                ),
            ),
        ),
        Option(
            "trust",
            "a repro bundle's host code may run: its Python tools and tests/doctor.py run in the "
            "workbench's own process, outside the sandbox",
            default=False,
            type="bool",
            check=checked(lambda v: isinstance(v, bool), "trust={value!r}: give True or False"),
            more="without it such a bundle is refused (E_TRUST, naming what would run); JavaScript and "
            "TypeScript tools run in the sandbox and need none; a gem folder is yours and needs none; "
            "docs/bundles.md",
            flags=(Flag("--trust", how="const", help="a bundle's Python tools and tests/doctor.py may run"),),
        ),
        Option(
            "inspect",
            "Deno's inspector on the sandbox, at a loopback port printed with a chrome://inspect "
            "address and a VS Code launch.json snippet",
            type='bool | Literal["wait"]',
            default=False,
            check=checked(
                lambda v: v is True or v is False or v == "wait",
                "inspect={value!r}: give True, False or 'wait'",
            ),
            more="'wait': each call waits until a debugger attaches; time paused in the debugger does "
            "not count against the call's timeout; the tool's permissions are unchanged; the port closes "
            "with the bench; docs/debugging.md, docs/security.md",
            flags=(
                Flag(
                    "--inspect",
                    how="optional",
                    metavar="wait",
                    help="attach VS Code or Chrome to the sandbox (=wait: each call waits for it)",
                    parse=_inspect_flag,
                ),
            ),
        ),
        Option(
            "memory_mb",
            "the V8 heap limit of the Deno sandbox, in MiB",
            default=512,
            type="int",
            flags=(
                Flag(
                    "--memory-mb",
                    metavar="N",
                    help="the sandbox's heap limit (MiB)",
                    parse=number(int, what="a whole number of MiB"),
                ),
            ),
        ),
        Option(
            "limits",
            "the bounds of every call (ctx/limits.py: file and result sizes, SQL rows, HTTP bodies…)",
            type="Limits | None",
            default_doc="the platform's and the workbench's",
        ),
        Option(
            "keep_runs",
            "run folders kept on real files: the most recently modified N (None: all)",
            default=50,
            type="int | None",
            check=checked(
                lambda v: v is None or (_real(v) and isinstance(v, int) and v >= 0),
                "keep_runs={value!r}: give a number of run folders (>= 0) or None",
            ),
            more="applied when a bench on real files opens: a run folder is deleted once it is neither "
            "among the keep_runs most recently modified nor modified within keep_run_days days; the same "
            "open removes temp files left by a write that was killed before it finished",
            flags=(
                Flag(
                    "--keep-runs",
                    metavar="N",
                    help="run folders kept",
                    parse=number(int, what="a number of run folders"),
                ),
            ),
        ),
        Option(
            "keep_run_days",
            "run folders modified within this many days (of the bench's clock) are kept too",
            default=7.0,
            type="float",
            check=checked(lambda v: _real(v) and v >= 0, "keep_run_days={value!r}: give days (>= 0)"),
            flags=(
                Flag(
                    "--keep-run-days",
                    metavar="D",
                    help="days run folders are kept",
                    parse=number(float, what="days"),
                ),
            ),
        ),
    ),
    views=(
        View("tools", "the gem's tools"),
        View("calls", "the bench's calls"),
        View("snapshot", "the state as a Snapshot", table=False),
        View("diff", "what changed since a Snapshot", table=False),
        View("restore", "put back a Snapshot", table=False),
    ),
)


#: views that are objects on the bench, not methods (named without "()" in errors)
_ATTRIBUTES = frozenset({"email"})


# -- the option table of a platform -----------------------------------------------------------
def specs_for(profile: Profile, specs: Iterable[CapabilitySpec]) -> list[CapabilitySpec]:
    """The specs a bench of `profile` has: every bench's, then its capabilities' in order."""
    impls = {c.impl for c in profile.capabilities}
    return [BENCH, *(s for s in specs if s.impl and (s.impl in impls or any(i in impls for i in s.covers)))]


def options_for(
    profile: Profile, specs: Iterable[CapabilitySpec]
) -> dict[str, tuple[Option, CapabilitySpec]]:
    """{option name: (option, its capability)} that `workbench.open` takes for `profile`'s gems
    (an opt-in option only where the profile names it in `open_options`)."""
    wanted = set(profile.open_options)
    return {
        o.name: (o, s)
        for s in specs_for(profile, specs)
        for o in s.options
        if not o.opt_in or o.name in wanted
    }


def views_for(profile: Profile, specs: Iterable[CapabilitySpec]) -> dict[str, tuple[View, CapabilitySpec]]:
    """{view name: (view, its capability)} a bench of `profile` lists and answers."""
    return {v.name: (v, s) for s in specs_for(profile, specs) for v in s.views}


def unknown_option(
    name: str, profile: Profile, specs: Iterable[CapabilitySpec], profiles: Iterable[Profile]
) -> UsageError:
    """The error for an option `profile`'s benches do not take: which platform has it (and
    through which capability), and the closest option this one has (its own name for the same
    thing first: http= for fetch_handlers=)."""
    specs = list(specs)
    mine = options_for(profile, specs)
    others = [(p, table[name]) for p in profiles if name in (table := options_for(p, specs))]
    alias = next((o.same_as for _, (o, _) in others if o.same_as in mine), None)
    near = alias or closest(name, mine)
    hint = f"; did you mean {near}=?" if near else ""
    if others:
        where = ", ".join(f"{p.title} ({s.title})" for p, (_, s) in others)
        return UsageError(
            f"{name}= is an option of {where}; {profile.title} do not have it{hint}",
            option=name,
            platform=profile.name,
            platforms=[p.name for p, _ in others],
            suggest=near,
        )
    return UsageError(
        f"open() has no option {name}= (for {profile.title}){hint}",
        option=name,
        platform=profile.name,
        platforms=[],
        suggest=near,
    )


def foreign_view(
    name: str, profile: Profile, specs: Iterable[CapabilitySpec], profiles: Iterable[Profile]
) -> AttributeError:
    """The error for a bench view or action `profile`'s benches do not have: which platform has
    it and through which capability ("outbox() is a view of agent custom tools (ctx.tools);
    Notochord gems do not have it")."""
    specs = list(specs)
    others = [(p, table[name]) for p in profiles if name in (table := views_for(p, specs))]
    shown = name if name in _ATTRIBUTES else f"{name}()"
    if others:
        where = ", ".join(f"{p.title} ({s.title})" for p, (_, s) in others)
        return AttributeError(f"{shown} is a view of {where}; {profile.title} do not have it")
    return AttributeError(f"a bench of {profile.title} has no attribute {name!r}")
