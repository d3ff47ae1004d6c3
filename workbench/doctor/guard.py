"""What keeps a doctor run harmless and bounded: the benches it refuses, the bench's bookkeeping
it puts back, and the hard stop at the end of its time.

The doctor calls tools thousands of times, so it runs only where every effect stays inside the
bench: a provider that acts outside (a real SMTP server, real HTTP, a real web search, the
user's own files and storage, a plugin capability declaring one) is refused before any call,
naming its option. Each capability says which of its options act for real
(`CapabilitySpec.real_effects`), so a plugin's is refused the same way.

Its own calls leave nothing behind: the call log, the clock (frozen or not), the bench's seed
stream and call counter are as they were before the run (`Kept`), and so is every part of the
bench's state its capabilities declare (the activity and HTTP logs, the mock outbox, the
recipients and faults: ctx/state.py). `seconds=` bounds the whole run by wall clock (`HardStop`): between
calls the search stops itself; a call still running at the end (a Python tool sleeping or
spinning past its own timeout, a sandbox call) is interrupted by a timer signal in the main
thread, where a bench is used.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..bench.bench import Bench


class OutOfTime(BaseException):  # noqa: N818 - not an error: the run's time is up
    """Raised where the doctor's time ends; a BaseException so that neither hypothesis nor a
    tool's own `except Exception` takes it for a failure to shrink or swallow."""


class OutOfShare(BaseException):  # noqa: N818 - not an error: one tool's share is spent
    """Raised in a tool's search once its share of the run's time is spent."""


def real_effects(bench: Bench) -> list[str]:
    """The options of `bench` that act outside it for real: "outbox=", "http='real'", … and
    "providers=" when its files or storage are the user's own."""
    from ..ctx.registry import specs_of
    from ..ctx.spec import backend_of

    real = [k for k, v in sorted(bench.provider_kinds.items()) if v == "real"]
    out = [f"providers= (its {' and '.join(real)} on real providers)"] if real else []
    for spec in specs_of(bench.profile):
        backend = backend_of(bench.providers, spec)
        if spec.real_effects is not None and backend is not None:
            out += [o for o in spec.real_effects(backend) if o not in out]
    return out


def refuse_real(bench: Bench) -> None:
    """E_USAGE naming every option of `bench` that acts outside it; nothing when none does."""
    effects = real_effects(bench)
    if effects:
        raise UsageError(
            f"the doctor calls each tool thousands of times and puts the state back between them: "
            f"it runs only on providers that keep every effect inside the bench; this one acts for "
            f"real through {', '.join(effects)}. Open the gem on mock providers (the default) "
            f"with fixtures instead",
            options=effects,
        )


class Kept:
    """The bench's own bookkeeping as it was before a run, put back after it: its calls
    (results ring, counter, the latest call's state copy), its seed stream and its clock. What
    its capabilities hold beyond the state (the logs, allow-lists, faults, secrets, served
    answers) is put back by the state model (`ctx.state.take`/`restore` of the "setup" and
    "log" parts); the state itself (files, storage, the outbox, the mailbox) by the run's
    restore of the fixtures' snapshot."""

    def __init__(self, bench: Bench) -> None:
        from ..ctx import state

        self.bench = bench
        self.saved = bench.results.saved()  # (an empty one too: it is put back empty)
        self.parts = state.take(bench, roles=("setup", "log"))
        # the latest call's state copy (its `pin`) is taken aside, not closed by the run's calls
        from ..pins.pinning import pinning_of

        self.pinning = pinning_of(bench)
        self.counters = bench.core.saved()
        self.latest = self.pinning.latest if self.pinning is not None else None
        if self.pinning is not None:
            self.pinning.latest = None
        self.clock = bench.clock.saved()

    def put_back(self) -> None:
        from ..ctx import state

        bench = self.bench
        bench.results.put_back(self.saved)
        state.restore(bench, self.parts)  # (never moves the clock: that is put back below)
        bench.core.put_back(self.counters)
        if self.pinning is not None:
            self.pinning.keep(self.latest)
        bench.clock.put_back(self.clock)  # as it was, without telling listeners: nothing moved


def _in_gc_callback(frame: FrameType | None) -> bool:
    """Whether `frame` runs inside a garbage collector callback (hypothesis times the
    collector), where an exception is "ignored" and printed rather than raised."""
    import gc

    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    depth = 0
    while frame is not None and depth < 50:
        if frame.f_code in codes:
            return True
        frame, depth = frame.f_back, depth + 1
    return False


#: Seconds after which the run's end rings again while its OutOfTime has not been caught.
RING_AGAIN = 0.05


class HardStop:
    """`with HardStop(deadline):` raises OutOfTime in the main thread at `deadline`
    (time.monotonic()), wherever it is, unless the block ended; elsewhere only `check()`
    stops (between calls)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self._old: Any = None
        self._armed = False

    def check(self) -> None:
        """OutOfTime once the deadline has passed."""
        if time.monotonic() >= self.deadline:
            self.fired = True
            raise OutOfTime

    def _ring(self, signum: int, frame: FrameType | None) -> None:
        if self._armed:
            if _in_gc_callback(frame):  # raised there it is printed and lost: ring again soon
                signal.setitimer(signal.ITIMER_REAL, 0.01)
                return
            self.fired = True
            # and again until heard: raised in a weakref callback or a __del__ the collector
            # runs, it is printed and dropped like in a gc callback (`heard` ends the rings)
            signal.setitimer(signal.ITIMER_REAL, RING_AGAIN)
            raise OutOfTime

    def heard(self) -> None:
        """The OutOfTime was caught: no more rings (the block goes on to its end)."""
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __enter__(self) -> HardStop:
        main = threading.current_thread() is threading.main_thread()
        if (
            main
            and hasattr(signal, "setitimer")
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        ):
            self._old = signal.signal(signal.SIGALRM, self._ring)
            self._armed = True
            signal.setitimer(signal.ITIMER_REAL, max(self.deadline - time.monotonic(), 0.001))
        return self

    def disarm(self) -> None:
        """No interrupt from here on (the run is putting the bench back)."""
        if self._armed:
            self._armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)

    def __exit__(self, *exc: Any) -> None:
        self.disarm()
