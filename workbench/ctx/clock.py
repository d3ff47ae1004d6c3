"""The bench's virtual clock (issue 29): the time the ctx layer hands out, frozen, moved or real.

`bench.clock` is one `Clock`; the ctx layer and its providers read it through a narrow
`now() -> epoch seconds` callable (`Clock.time`), never `time.time()`: audit rows, the mock
outbox's `time`, mock files' `modified`, file history, Ekanos `updatedAt`, call ids and
`started`, run-folder retention. Timeouts and deadlines (time.monotonic) stay wall-clock.

Three modes: real (wall time), running (wall time plus an offset, after `set`/`advance` on a
real clock) and frozen (time does not pass; `advance` moves it).
"""

from __future__ import annotations

import re
import threading
import time as _time
from datetime import UTC, datetime
from typing import Any, Literal

from .._errors import UsageError

__all__ = ["Clock", "Tape", "parse_duration", "parse_instant"]

_LAST = 1e11  # epoch seconds of about year 5138: a later time is milliseconds given by mistake
_UNITS = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|w|d|h|m|s)")
# the longest duration or date text read: a real one is a few characters, and the parts'
# pattern is quadratic in a run of digits with no unit (20,000 of them took 8 s)
MAX_TEXT = 100


def _shown(value: Any) -> str:
    """`value` for a message: its repr, cut (a hostile one may be megabytes)."""
    text = (
        repr(value)
        if not isinstance(value, int) or value.bit_length() < 200
        else f"an int of {value.bit_length()} bits"
    )
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


def _bounded_text(value: str, what: str) -> str:
    """`value` when it is at most MAX_TEXT characters, else E_USAGE naming the limit."""
    if len(value) > MAX_TEXT:
        raise UsageError(
            f"{what} {_shown(value)}: {len(value):,} characters; a {what} is at most {MAX_TEXT} "
            "characters (e.g. '3d', '2h30m', '2026-01-05T09:00:00Z')",
            value=_shown(value),
            limit=MAX_TEXT,
        )
    return value


def parse_duration(value: Any) -> float:
    """Seconds from a number or a text such as "3d", "2h30m", "90s", "1w", "250ms" (a leading
    "-" moves back); E_USAGE naming the value otherwise."""
    if isinstance(value, bool):
        raise UsageError(f"duration {value!r}: give seconds or a text such as '3d' or '2h30m'", value=value)
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:  # an int past a float's range
            seconds = float("inf")
        if seconds != seconds or seconds in (float("inf"), float("-inf")):
            raise UsageError(
                f"duration {_shown(value)}: give a finite number of seconds", value=_shown(value)
            )
        return seconds
    if isinstance(value, str):
        text = _bounded_text(value, "duration").strip().lower().replace(" ", "")
        sign = -1.0 if text.startswith("-") else 1.0
        body = text.lstrip("+-")
        parts = _PART.findall(body)
        if body and "".join(n + u for n, u in parts) == body:
            return sign * sum(float(n) * _UNITS[u] for n, u in parts)
    raise UsageError(
        f"duration {_shown(value)}: give seconds or a text such as '3d', '2h30m', '90s', '250ms'",
        value=_shown(value),
    )


def parse_instant(value: Any) -> float:
    """Epoch seconds from a datetime (naive: UTC), an ISO 8601 text ("2026-01-05",
    "2026-01-05T09:00:00Z") or epoch seconds; E_USAGE naming the value otherwise."""
    if isinstance(value, datetime):
        return _within((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp(), value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == value and 0 <= value < _LAST:
            return float(value)
    elif isinstance(value, str):
        value = _bounded_text(value, "date")
        if re.fullmatch(r"\s*\d{9,}(\.\d+)?\s*", value):  # epoch seconds, as a flag gives them
            return parse_instant(float(value))
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            pass
        else:
            return parse_instant(parsed)
    raise UsageError(
        f"date {_shown(value)}: give a datetime, an ISO 8601 text such as '2026-01-05T09:00:00Z', or epoch seconds",
        value=_shown(value),
    )


def _within(seconds: float, given: Any) -> float:
    """`seconds` when it is a time the clock can show (1970 to about 5138), else E_USAGE."""
    if not 0 <= seconds < _LAST:
        raise UsageError(
            f"date {_shown(given)}: the clock shows times from 1970 to the year 5138", value=_shown(given)
        )
    return seconds


class Tape:
    """A call's reads of the clock: the served ones first, in order, then the clock's own, never
    before the last one served (time does not run back); at most MAX_READS kept."""

    MAX_READS = 1000  # as many as the sandbox keeps of its own clock (limits.MAX_TICKS)

    def __init__(self, served: list[float]) -> None:
        self.served = served
        self.at = 0
        self.taken: list[float] = []

    def read(self, now: float) -> float:
        """The time this read shows, `now` being the clock's."""
        if self.at < len(self.served):
            now = self.served[self.at]
            self.at += 1
        elif self.served and now < self.served[-1]:
            now = self.served[-1]
        if len(self.taken) < self.MAX_READS:
            self.taken.append(now)
        return now


#: a tape not made yet (Clock.tape without served reads): made at the first read
_TAPING = Tape([])


class Clock:
    """The time a bench's tools see: `freeze`, `advance`, `set`, `real`; `now()`, `time()`."""

    def __init__(self) -> None:
        self._mode: Literal["real", "running", "frozen"] = "real"
        self._offset = 0.0  # running: seconds added to wall time
        self._at = 0.0  # frozen: the epoch seconds it shows
        self._lock = threading.Lock()
        # called after freeze/set/advance/real: bench.email delivers mail scheduled with `at`
        self.listeners: list[Any] = []
        self._tape: Tape | None = None  # a call's reads, while one is kept (`tape`)

    def _moved(self) -> Clock:
        for listener in list(self.listeners):
            listener()
        return self

    @property
    def mode(self) -> str:
        """ "real", "running" (wall time moved by set/advance) or "frozen"."""
        return self._mode

    @property
    def frozen(self) -> bool:
        """Whether time stands still (it moves only by `advance` and `set`)."""
        return self._mode == "frozen"

    @property
    def virtual(self) -> bool:
        """Whether the clock is not the wall clock (frozen, set or advanced)."""
        return self._mode != "real"

    def time(self) -> float:
        """The clock's now in epoch seconds (the callable the ctx layer and providers read)."""
        mode = self._mode
        if mode == "frozen":
            now = self._at
        elif mode == "running":
            now = _time.time() + self._offset
        else:
            now = _time.time()
        tape = self._tape
        if tape is None:
            return now
        if tape is _TAPING:  # made at the first read: most calls read no time through ctx
            tape = self._tape = Tape([])
        return tape.read(now)

    def tape(self, served: list[float] | None = None) -> None:
        """Keep the reads from now on (a call's, for its pin), serving `served` first: the
        reads of the pinned call its replay repeats."""
        self._tape = Tape(served) if served else _TAPING

    def untape(self) -> list[float]:
        """Stop keeping reads; the ones kept since `tape`."""
        tape, self._tape = self._tape, None
        return [] if tape is None or tape is _TAPING else tape.taken

    def now(self) -> datetime:
        """The clock's now, a timezone-aware datetime in UTC."""
        return datetime.fromtimestamp(self.time(), UTC)

    def freeze(self, at: Any = None) -> Clock:
        """Stop time at `at` (a datetime, ISO text or epoch seconds; default: the clock's now)."""
        when = self.time() if at is None else parse_instant(at)
        with self._lock:
            self._mode, self._at = "frozen", when
        return self._moved()

    def set(self, at: Any) -> Clock:
        """Jump to `at`; a frozen clock stays frozen there, another runs on from it."""
        when = parse_instant(at)
        with self._lock:
            if self._mode == "frozen":
                self._at = when
            else:
                self._mode, self._offset = "running", when - _time.time()
        return self._moved()

    def advance(self, by: Any) -> Clock:
        """Move the clock on by `by`: seconds or a text such as "3d", "2h30m"."""
        seconds = parse_duration(by)
        with self._lock:
            _within(self.time() + seconds, f"now + {_shown(by)}")  # E_USAGE naming the duration
            if self._mode == "frozen":
                self._at += seconds
            else:
                self._mode, self._offset = "running", self._offset + seconds
        return self._moved()

    def real(self) -> Clock:
        """Back to wall time."""
        with self._lock:
            self._mode, self._offset = "real", 0.0
        return self._moved()

    def saved(self) -> tuple[str, float, float]:
        """Its mode, the time it shows and its offset, as `put_back` takes them."""
        with self._lock:
            return (self._mode, self.time(), self._offset)

    def put_back(self, saved: tuple[str, float, float]) -> None:
        """Stand as `saved` again, without telling listeners: nothing moved for them (a run
        that borrowed the bench, the doctor's, gives it back as it found it)."""
        mode, at, offset = saved
        with self._lock:
            if mode == "frozen":
                self._mode, self._at = "frozen", at
            elif mode == "running":
                self._mode, self._offset = "running", offset
            else:
                self._mode, self._offset = "real", 0.0

    def __repr__(self) -> str:
        shown = self.now().isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self._mode == "real":
            return f"<Clock real: {shown}>"
        return f"<Clock {self._mode}: {shown}>"
