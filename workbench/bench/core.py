"""The core a bench's calls stand on: what they share (one lock, the seed's stream, the call
count, the runners, the loaded definition and its validators, the standing hooks) and what a
feature gives a call (`CallIdentity`, hooks). The call itself is `_pipeline.call`.

The Bench owns one `CallCore` (`bench.core`); features (pins, bundles, crash reruns, the doctor)
read and set what they need here, through public names, and take part in a call through hooks
(ctx/hooks.py), never through the Bench's private attributes.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ctx.resources import SPEC as RESOURCES
from ..ctx.spec import backend_of
from ..ctx.stores import default_state_dir
from ..gem.schema import check_input
from ..runners import RUNNERS, Runner, Setup
from ..runners.deno import SandboxOptions
from .reload import definition_files, stamp

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from ..ctx.hooks import CallHooks
    from ..ctx.stores import Providers
    from ..gem import Manifest, ToolSpec
    from ..platforms import Limits, Profile

__all__ = ["CallCore", "CallIdentity"]


@dataclass(frozen=True, slots=True)
class CallIdentity:
    """What a call repeats of another (a pinned call's replay, a bundle's, a crash rerun, the
    doctor): its id, idempotency key, seeds and clock reads. None: drawn as for a new call."""

    call_id: str | None = None
    key: str | None = None
    seed: int | None = None
    ids: int | None = None
    clock_ms: float | None = None
    ticks: list[float] | None = None  # the sandbox's reads of a running clock (ms since start)
    times: list[float] | None = None  # the ctx layer's reads of it
    given: frozenset[str] = frozenset()  # which of seed/ids/... were given (None may be given)

    @classmethod
    def of(cls, **fields: Any) -> CallIdentity:
        """An identity from keyword fields, some of which may be None on purpose (a pinned call
        without a seed repeats "no seed", not a new one)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"given"}
        unknown = set(fields) - names
        if unknown:
            raise TypeError(f"CallIdentity has no field {', '.join(sorted(unknown))}")
        return cls(**fields, given=frozenset(fields))

    def moved_on(self) -> CallIdentity:
        """A crash rerun's identity: its own seeds (it draws new ids, as a rerun on the platform
        does), derived from these so that the doctor's reruns repeat; its own call id."""
        return dataclasses.replace(
            self,
            call_id=None,
            seed=None if self.seed is None else (self.seed * 31 + 7) & 0x7FFFFFFF,
            ids=None if self.ids is None else (self.ids * 31 + 7) & 0x7FFFFFFF,
        )


#: seedless calls' tokens drawn at once (one draw of the stream costs a call as much as 32 slices)
TOKENS = 32


class CallCore:
    """What one bench's calls share. Attributes are the pipeline's and the features'; a user
    meets them only through the Bench."""

    def __init__(self, manifest: Manifest, *, seed: int | None, sandbox: SandboxOptions | None) -> None:
        # one call at a time: a call is one storage transaction and one sandbox conversation
        self.lock = threading.RLock()
        # seed=: one stream for every id and draw the bench makes (call ids, idempotency keys,
        # reuse='random', crash points, each call's seed); None: the system's randomness
        self.rng = random.Random(seed)
        # the id seeds of calls a hook keeps on a bench without a seed: the system's randomness,
        # drawn once (a seed per call need not come from os.urandom)
        self.draws = random.Random()
        self.tokens: list[str] = []  # seedless calls' tokens, drawn TOKENS at a time
        self.count = 0  # top-level calls made: the sequence each call's seed is derived from
        self.second: tuple[int, str] = (0, "")  # a second and its text in call ids
        self.sandbox_options = sandbox or SandboxOptions()
        self.runners: dict[str, Runner] = {}  # this bench's own: modules, sandbox (N3, N5)
        self.validators: dict[str, Any] = {}
        # tool -> (device, inode, mtime) of its file when last found a regular file (_pipeline)
        # tool name -> (its file as text, (device, inode, mtime) when checked last)
        self.files_checked: dict[str, tuple[str, tuple[int, int, int] | None]] = {}
        # the definition as loaded: an edit is reloaded before the next call (bench/reload.py)
        self.definition = definition_files(manifest)
        self.stamp = stamp(self.definition)
        # standing hooks: take part in every call (pins), in order; worked out once for calls
        # given no hooks of their own (ctx/hooks.py `asked`)
        self.hooks: tuple[CallHooks, ...] = ()
        self.asked: tuple[tuple[CallHooks, ...], bool] = ((), False)
        self.finalizers: list[Callable[[], Any]] = []  # what the bench owns (a bundle's folder)
        # `res.pin(name)` of its calls' results (set by the bench: _pins.pin on it)
        self.pinner: Callable[[Any, str], Any] | None = None
        self.nest: Callable[..., Any] | None = None  # runs ctx.tools.<own tool> (_pipeline)

    def add_hook(self, hook: CallHooks) -> None:
        """Let `hook` take part in every call from now on (after those added before)."""
        self._hooks_are((*self.hooks, hook))

    def remove_hook(self, hook: CallHooks) -> None:
        """`hook` takes part in no call from now on."""
        self._hooks_are(tuple(h for h in self.hooks if h is not hook))

    def _hooks_are(self, hooks: tuple[CallHooks, ...]) -> None:
        from ..ctx.hooks import asked

        with self.lock:  # not while a call runs: it works with the ones it started with
            self.hooks, self.asked = hooks, asked(hooks)

    def saved(self) -> tuple[Any, ...]:
        """The call count, the seed's stream and the id clock, as `put_back` takes them."""
        return (self.count, self.rng.getstate(), self.second)

    def put_back(self, saved: tuple[Any, ...]) -> None:
        count, rng, second = saved
        self.count, self.second = count, second
        self.rng.setstate(rng)

    def token(self) -> str:
        """38 hex digits for a seedless call's id and idempotency key, from the bench's own
        stream (unique, not unpredictable), drawn TOKENS calls' worth at a time."""
        if not self.tokens:
            text = f"{self.draws.getrandbits(152 * TOKENS):0{38 * TOKENS}x}"
            self.tokens = [text[i : i + 38] for i in range(0, 38 * TOKENS, 38)]
        return self.tokens.pop()

    def edited(self) -> bool:
        """Whether the gem's definition changed on disk since it was loaded."""
        return stamp(self.definition) != self.stamp

    def loaded(self, files: Any, at: Any) -> None:
        """A definition was (re)loaded: its files and their stamp; its validators are made anew."""
        self.definition, self.stamp = files, at
        self.validators.clear()
        self.files_checked.clear()

    def check_input(
        self, tool: ToolSpec, args: Any, profile: Profile, limits: Limits
    ) -> tuple[Any, WorkbenchError | None]:
        """The input as the tool receives it, or E_SCHEMA naming the field (N8): any value,
        however deep, cyclic or costly to check, is a coded error, never an exception (SEC7)."""
        validator = self.validators.get(tool.name)
        if validator is None:
            from ..gem.schema import InputValidator

            validator = self.validators[tool.name] = InputValidator(tool.input_schema, profile.schema_rules)
        return check_input(validator, args, tool=tool.name, max_depth=limits.json_depth)

    def runner(self, kind: str, manifest: Manifest, providers: Providers, profile: Profile) -> Runner:
        """The runner of `kind` (RUNNER_FOR[language]), made on first use."""
        found = self.runners.get(kind)
        if found is not None:
            return found
        with self.lock:  # bench.sandbox from another thread must not make a second one (N3)
            if kind not in self.runners:
                base = providers.state_dir or default_state_dir(manifest.id, manifest.root)
                cache = backend_of(providers, RESOURCES)
                readable = (cache.root,) if cache is not None else ()
                options = self.sandbox_options
                if profile.import_map is not None:  # the platform's SDK (Ekanos)
                    options = dataclasses.replace(options, import_map=profile.import_map)
                setup = Setup(manifest.root, base, options=options, readable=(*readable, *profile.sdk_dirs))
                self.runners[kind] = RUNNERS[kind](setup)
            return self.runners[kind]

    def close(self) -> None:
        """Stop the runners and let the standing hooks go (the caller holds the lock)."""
        for runner in self.runners.values():
            runner.stop()
        for hook in self.hooks:
            hook.close()
