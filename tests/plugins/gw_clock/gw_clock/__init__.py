"""ctx.ticker, a toy capability registered through the `gem_workbench.capabilities` entry
point (docs/platforms.md), and Clockwork, a platform registered through
`gem_workbench.platforms` whose ctx is `ticker` and `storage.kv`.

`ctx.ticker.now()` is the bench's virtual time in milliseconds; `ctx.ticker.advance(ms)` moves it
on. The capability brings everything the workbench shows of it: its ctx class (the Python and
JS ctx route Clockwork's `ticker` row to it), the `ticker_start=` option of `workbench.open` and
its `--ticker-start MS` flag, the `--advance-ticker MS` action, a backend per bench, a state per
call and the `bench.ticker()` view.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.plugin import (
    Action,
    Capability,
    CapabilitySpec,
    EntryPoint,
    Flag,
    Grants,
    Limits,
    Manifest,
    Method,
    OpenContext,
    Option,
    Profile,
    Refusal,
    SchemaRules,
    StateContext,
    StatePart,
    ToolSpec,
    View,
    WorkbenchError,
    checked,
    gem_root,
    lint_manifest,
    number,
    raise_problems,
    read_json,
    tool_specs,
)

if TYPE_CHECKING:
    import pandas as pd

    from workbench.plugin import CallSession

MAX_MS = 10**15  # about 31,700 years: the clock's bound, past which a value is refused


class VirtualClock:
    """ctx.ticker's backend: the bench's time, and every read and move of it."""

    def __init__(self, ms: int) -> None:
        self.ms = ms
        self.log: list[dict[str, Any]] = []

    def advance(self, ms: int, *, by: str) -> int:
        self.ms = min(MAX_MS, self.ms + ms)
        self.log.append({"by": by, "op": "advance", "ms": self.ms})
        return self.ms


class ClockCall:
    """ctx.ticker's state in one call: how many times the tool read the clock."""

    def __init__(self) -> None:
        self.reads = 0


def _ms(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MS:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", f"ticker.{what}: an integer of milliseconds, 0 to {MAX_MS:,}", field="ms"
        )
    return value


class Ticker:
    """ctx.ticker for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def _clock(self) -> VirtualClock:
        clock: VirtualClock | None = self.s.providers.backends.get("ticker")
        if clock is None:
            raise WorkbenchError(
                "E_INTERNAL", "ticker: this call has no clock (open the gem with workbench.open)"
            )
        return clock

    def now(self) -> int:
        """The virtual time, in milliseconds since the epoch."""
        clock, own = self._clock(), self.s.of("ticker")
        own.reads += 1
        clock.log.append({"by": self.s.call_id, "op": f"now #{own.reads}", "ms": clock.ms})
        return clock.ms

    def advance(self, ms: Any) -> int:
        """Move the virtual time on by `ms` milliseconds; the new time."""
        return self._clock().advance(_ms(ms, "advance(ms)"), by=self.s.call_id)


def _backend(opening: OpenContext) -> VirtualClock:
    return VirtualClock(opening.options.get("ticker_start", 0))


def _view(bench: Any) -> pd.DataFrame:
    """The clock's reads and moves, one row each (who: a call id, or the bench's action)."""
    import pandas as pd

    clock: VirtualClock = bench.providers.backends["ticker"]
    return pd.DataFrame(clock.log, columns=["by", "op", "ms"])


def _advance(bench: Any, values: list[str]) -> None:
    for text in values:
        bench.providers.backends["ticker"].advance(
            _ms(number(int, what="milliseconds")(text), "ms"), by="--advance-ticker"
        )


# -- the bench state the capability owns: its time (state) and its reads and moves (log) ---------
def _ticker_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    if not isinstance(value, dict) or set(value) != {"ms"}:
        raise bad("ticker", "is not {ms}")
    ms = value["ms"]
    if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_MS:
        raise bad("ticker.ms", f"is not an integer of milliseconds, 0 to {MAX_MS:,}")
    if cx.backend is not None:
        cx.backend.ms = ms


def _log_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    if value != []:
        raise bad("ticker_log", "is a log the calls write: a state does not put rows in it")
    if cx.backend is not None:
        cx.backend.log.clear()


def _log_restore(cx: StateContext, rows: list[dict[str, Any]]) -> None:
    if cx.backend is not None:
        cx.backend.log[:] = rows


#: the clock's time: in snapshots, diffs, restores, state folders, bundles and pinned cases
TICKER_PART = StatePart(
    "ticker",
    dump=lambda cx: {"ms": cx.backend.ms} if cx.backend is not None else {},
    put=_ticker_put,
    blank=lambda: {"ms": 0},
)
#: the clock's reads and moves: put back by a restore, never dumped into a state
TICKER_LOG = StatePart(
    "ticker_log",
    dump=lambda cx: list(cx.backend.log) if cx.backend is not None else [],
    put=_log_put,
    role="log",
    restore=_log_restore,
    blank=list,
)


#: ctx.ticker as a unit: the one registry row the plugin adds
TICKER = CapabilitySpec(
    impl="ticker",
    title="ctx.ticker",
    implementation=Ticker,
    backend=_backend,
    call_state=lambda session: ClockCall(),
    state=(TICKER_PART, TICKER_LOG),
    options=(
        Option(
            "ticker_start",
            "the virtual clock's time when the bench opens, in ms since the epoch",
            default=0,
            type="int",
            check=checked(
                lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_MS,
                "ticker_start={value!r}: an integer of milliseconds, 0 to " + f"{MAX_MS:,}",
            ),
            flags=(
                Flag(
                    "--ticker-start",
                    metavar="MS",
                    help="the virtual clock's start, in ms",
                    parse=number(int, what="milliseconds"),
                ),
            ),
        ),
    ),
    views=(View("ticker", "the virtual clock's reads and moves", fn=_view),),
    actions=(Action("--advance-ticker", "MS", "move the virtual clock on before the call", _advance),),
)

# -- Clockwork, a platform whose ctx has the clock ---------------------------------------------
RULES = SchemaRules()
CAPABILITIES = (
    Capability(
        "ticker",
        "namespace",
        "ticker",
        (Method("now", ()), Method("advance", ("ms",))),
        doc="a virtual clock",
    ),
    Capability(
        "storage.kv",
        "namespace",
        "kv",
        (
            Method("get", ("key",)),
            Method("set", ("key", "value")),
            Method("delete", ("key",)),
            Method("list", ("prefix",)),
        ),
        doc="string keys and values",
    ),
)


def lint(folder: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the Clockwork gem at `folder` (manifest.json with `"platform":
    "clockwork"`, `id` and `tools`); [] when it loads."""
    found = lint_manifest(folder)  # no JSON Schema: Clockwork checks the shape itself
    if found.raw is None:
        return found.problems
    if not isinstance(found.raw.get("id"), str) or not isinstance(found.raw.get("tools"), list):
        found.bad("", "a Clockwork manifest has an `id` (a string) and `tools` (a list)")
        return found.problems
    found.tools(schema_key="input", rules=RULES)
    return found.done()


def load(folder: Path) -> Manifest:
    """The Clockwork gem at `folder` as the gem model; GemLoadError naming file and pointer."""
    root = gem_root(folder)
    raise_problems(lint(root))
    raw = read_json(root / "manifest.json")
    return Manifest(
        root=root,
        id=raw["id"],
        name=str(raw.get("name", raw["id"])),
        version=str(raw.get("version", "0.0.0")),
        platform="clockwork",
        permissions={},
        collections={},
        resources=(),
        tools=tool_specs(root, raw["tools"], schema_key="input"),
        schema_sql=None,
        raw=raw,
    )


def grants_for(manifest: Manifest, tool: ToolSpec) -> Grants:
    return Grants()  # the clock and kv need no grant


PROFILE = Profile(
    name="clockwork",
    title="Clockwork gems",
    limits=Limits(),
    schema_rules=RULES,
    entry=EntryPoint(),
    capabilities=CAPABILITIES,
    load=load,
    lint=lint,
    grants_for=grants_for,
)
