"""The Python side of the Deno sandbox: the call protocol (a call, the ctx calls it makes,
nested calls, its result or how it failed), over the process of lifecycle.py.

The other parts: the channel's framing framing.py, the process's start and stop lifecycle.py
(its plumbing process.py, its memory guard guard.py), a ctx call's serving serve.py, `deno
check` typecheck.py. stdout/stderr carry only the tool's console output, captured as logs, at
most limits.log_bytes per call (SEC5).
"""

from __future__ import annotations

import json
import math
import secrets
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._errors import WorkbenchError
from ..._json import utf8
from ...ctx.limits import DEFAULT as DEFAULT_LIMITS
from ...ctx.limits import MAX_TICKS
from ...gem.links import GemLinks
from ..python import Outcome
from .errors import tool_error
from .framing import COMPACT, Broken
from .guard import RUNTIME_MB, rss_limit_mb
from .lifecycle import HERE, SandboxOptions, SandboxProcess
from .process import Output, alive
from .serve import serve_ctx as _serve  # a name of this module: the tests wrap it here

if TYPE_CHECKING:
    from ...ctx import Capabilities

__all__ = ["HERE", "RECYCLED", "Sandbox", "SandboxOptions"]

RECYCLED = 75  # the host's exit code when a call left its Worker busy (host.ts RECYCLED)


class Sandbox(SandboxProcess):
    """A gem's JS/TS tools run in its Deno process (lifecycle.py), one call at a time or nested."""

    def __init__(self, gem_root: Path, *, deno_dir: Path, options: SandboxOptions) -> None:
        super().__init__(gem_root, deno_dir=deno_dir, options=options)
        self._mtimes: dict[Path, int] = {}
        self._uris: dict[Path, str] = {}  # each tool's file URL, made once (pathlib's: ~1 µs a call)
        self._nested: set[Path] = set()  # tools that ran nested: checked for edits at top calls
        self._links = GemLinks(gem_root)
        # the calls in flight, outermost first: a JS tool's ctx.tools call may run another JS
        # tool of the gem while it waits (nested, A3), served by this same loop re-entered
        self._active: dict[str, Capabilities] = {}
        # per call in flight, what arrived for it while a call nested in it ran: its "done", and
        # its own ctx.tools calls (each would nest again; its own loop serves them in turn)
        self._held: dict[str, list[tuple[dict[str, Any], bytes | None]]] = {}
        self._death: WorkbenchError | None = None  # how the process ended, for the outer calls
        # ctx shapes by number: a shape's text (~2 kB) crosses once per process, then its number
        self._shape_ids: dict[str, int] = {}
        self._shapes_sent: set[int] = set()
        self._between: list[str] = []  # why the process ended after the last call: a warning
        self._due: dict[str, float] = {}  # with an inspector: a paused call's first deadline

    def _new_process(self) -> None:
        self._mtimes.clear()
        self._shapes_sent.clear()
        for held in self._held.values():
            held.clear()  # messages of a process that is gone
        self._death = None

    # -- calls -----------------------------------------------------------------------------
    def call(
        self, file: Path, args: Any, caps: Capabilities, *, fresh: bool, mtime: int | None = None
    ) -> Outcome:
        """Run one call of a JS/TS tool; ctx calls are served by `caps` while it runs. Its
        ctx is the shape its profile's registry gives its grants (built in the Worker).

        Called again while a call is in flight (a ctx call of that tool runs another JS/TS tool
        of the gem: ctx.tools, A3), the nested call runs in the same Worker beside it, on this
        thread's stack: this loop then also serves the outer calls' ctx calls, except their
        own ctx.tools calls and their end, which wait for their loop to resume. So calls one
        tool makes through ctx.tools at once run one after the other (a result is held back
        until the calls started before it ended). A nested call's console output is part of
        its top call's logs; an edited tool is re-imported by the next top call.
        """
        out = self._call(file, args, caps, fresh=fresh, mtime=mtime)
        if out is None:  # the host ended before it read the call (RECYCLED): run it afresh
            out = self._call(file, args, caps, fresh=fresh, mtime=mtime)
        return out or Outcome(error=self._death or _gone())

    def _call(
        self, file: Path, args: Any, caps: Capabilities, *, fresh: bool, mtime: int | None = None
    ) -> Outcome | None:
        """call(), once; None when the host had ended (recycled) before it read the call."""
        session = caps.session
        limits = session.limits
        link = self._links.check()
        if link is not None:
            return Outcome(error=link)
        data = utf8(COMPACT.encode(args))  # a lone surrogate as the platform's JSON carries it
        if len(data) > limits.bridge_message_bytes:
            return Outcome(error=_input_too_large(len(data), limits.bridge_message_bytes))
        nested = bool(self._active)
        gone = self._ready(nested)
        if gone is not None:
            return gone
        if not nested:
            self._unsure = True  # until its "done": cut short, it leaves the host mid-conversation
        fresh = self._changed(file, fresh, nested, mtime)
        call_id = session.call_id
        nonce = "" if nested else f"--wb-end-{secrets.token_hex(16)}--"
        deadline = session.deadline or time.monotonic() + self.options.timeout
        proc, output = self.proc, self._output
        assert proc is not None and output is not None  # started above; a nested call returned if it was gone
        self._active[call_id] = caps
        self._held[call_id] = []
        try:
            if not nested:
                output.begin(nonce, limits.log_bytes)
                self._colocated = threading.get_ident()
            uri = self._uris.get(file) or self._uris.setdefault(file, file.as_uri())
            self._send(
                _message(uri, fresh, nonce, caps, nested, len(data), self._shape), data, deadline=deadline
            )
            return self._converse(caps, proc, output, nonce, nested, deadline)
        except OSError:  # it died or hung (a broken pipe, a timeout, a closed FIFO) before it read the call
            return None if self._recycled(proc, nested, deadline) else self._died(deadline)
        except Broken as exc:  # the host wrote something that is not the protocol: restart it
            logs = self.stop()
            return Outcome(
                error=WorkbenchError(
                    "E_SANDBOX",
                    f"the sandbox broke the bridge protocol ({exc}) and was restarted",
                    capability="process",
                ),
                logs=logs,
            )
        except BaseException:  # interrupted (Ctrl-C in a notebook): where the host is in the
            self.stop()  # conversation is unknown, and the next call would wait for it in vain
            raise
        finally:
            del self._active[call_id], self._held[call_id]
            if not nested:
                if self._watch is not None:
                    self._watch.end()
                self._colocated = None
                self._colocation.leave()  # (a Ctrl-C in a wait's own leave left it pinned)

    def _ready(self, nested: bool) -> Outcome | None:
        """The process ready for a call: a background start waited for, and one that died, was
        killed or was left mid-conversation restarted (top calls only). An Outcome when a
        nested call finds it gone; a failed background start is the top call's error."""
        self._warmed()
        if nested and self.proc is None:  # an earlier nested call of this invocation ended it
            return Outcome(error=self._death or _gone())
        failed, self._start_failed = self._start_failed, None
        if failed is not None and not nested:
            raise failed
        w = self._watch
        if w is not None and not nested:
            w.begin()  # from now on its CPU is the call's: the guard kills it for memory only
        killed = w is not None and w.fired  # (maybe still dying)
        if not nested and (self._unsure or killed or self.pid is None):
            # a process that died (or the guard killed) between calls, or one a Ctrl-C left in
            # the middle of its start or of a call: ended, and what a stop cut short closed,
            # before a new one
            self._ended_between()
            self.stop()
            self._start()
        return None

    def _converse(
        self,
        caps: Capabilities,
        proc: subprocess.Popen[bytes],
        output: Output,
        nonce: str,
        nested: bool,
        deadline: float,
    ) -> Outcome | None:
        """The call's conversation once sent: the ctx calls it makes served (and those of the
        calls it runs in, but for their own nested calls and ends), until its "done"."""
        session = caps.session
        limits, call_id, held = session.limits, session.call_id, self._held[session.call_id]
        limit = limits.bridge_message_bytes
        answered = False  # (a host that ended before it answered never began the call)
        try:
            while True:
                got = held.pop(0) if held else self._recv(deadline, limit)
                if got is None and self.options.inspector is not None:  # a debugger's pause does not count
                    got, deadline = self._paused(session, deadline, limit)
                if got is None:
                    return (
                        None if self._recycled(proc, nested or answered, deadline) else self._died(deadline)
                    )
                answered = True
                msg, payload = got
                mid, kind = msg.get("id"), msg.get("t")
                of = self._active.get(mid) if isinstance(mid, str) else None
                if of is None:
                    continue
                if mid != call_id and (kind == "done" or (kind == "ctx" and _nests(of, msg))):
                    self._held[str(mid)].append(got)  # an outer call's: its own loop takes it
                elif kind == "ctx":
                    ok, body = _serve(of, str(msg.get("method")), payload, limits)
                    if self.proc is not proc:  # a nested call it ran ended the process
                        return self._ended(call_id, held, deadline, limits)
                    reply = {"t": "reply", "id": mid, "seq": msg.get("seq"), "ok": ok, "n": len(body)}
                    self._send(reply, body, deadline=deadline)
                elif kind == "done":
                    return self._done(session, msg, payload, output, nonce, nested, deadline)
        except OSError:  # it died or hung (a broken pipe, a timeout, a closed FIFO)
            return None if self._recycled(proc, nested or answered, deadline) else self._died(deadline)

    def _paused(
        self, session: Any, deadline: float, limit: int
    ) -> tuple[tuple[dict[str, Any], bytes | None] | None, float]:
        """With an inspector, once `deadline` passed: the next message, within the deadline
        moved by the time a debugger held the Worker paused since the call began, and that
        deadline (the session's moves too, for its ctx calls). None when the moved deadline
        passed too or the process is gone."""
        inspector = self.options.inspector
        assert inspector is not None
        due = self._due
        for gone in [c for c in due if c not in self._active]:  # calls that ended
            del due[gone]
        first = due.setdefault(session.call_id, deadline)  # the call's deadline before any pause
        start, later = first - self.options.timeout, deadline
        while self.proc is not None and alive(self.proc):
            now = time.monotonic()
            later = max(later, first + inspector.paused_between(start, now))
            if now >= later:
                break
            if session.deadline is not None and session.deadline < later:
                session.deadline = later
            got = self._recv(later, limit)
            if got is not None or time.monotonic() < later:  # a message, or the process ended
                return got, later
        return None, later

    def _done(
        self,
        session: Any,
        msg: dict[str, Any],
        payload: bytes | None,
        output: Output,
        nonce: str,
        nested: bool,
        deadline: float,
    ) -> Outcome:
        """The call's end as its Outcome: its result or error, its logs (a top call's), its
        clock reads kept for its pin, and why the process ended before it, as a warning."""
        if not nested and self._watch is not None and self._watch.check() is not None:
            return self._died(deadline)  # its memory is over the limit: killed now
        logs = output.take(nonce, 5) if nonce else ""
        if not nested:
            _took(session, msg.get("ticks"), msg.get("start"))
        outcome = self._outcome(msg, payload, logs, session.limits)
        if not nested and self._between:
            outcome.warnings[:0], self._between = self._between, []
        if not nested:
            self._unsure = False  # the host is waiting for the next call again
        return outcome

    def _shape(self, text: str) -> dict[str, Any]:
        """A call's ctx shape: its number, and its text the first time this process sees it
        (the host keeps the texts and gives each new Worker the ones it needs)."""
        sid = self._shape_ids.setdefault(text, len(self._shape_ids))
        if sid in self._shapes_sent:
            return {"shape": sid}
        self._shapes_sent.add(sid)
        return {"shape": sid, "shapeText": text}

    def _changed(self, file: Path, fresh: bool, nested: bool, mtime: int | None = None) -> bool:
        """Whether the Worker must start anew to run `file`: asked to, or it or a tool that
        ran nested (which a caller may run again) was edited since it was imported. A nested
        call cannot restart it (its callers run there): it records the file, so the next top
        call sees an edit. Only those files are looked at: one stat per call for most gems, none
        when the bench gives the tool file's `mtime` (its check just before the call)."""
        if nested:
            self._mtimes.setdefault(file, _mtime(file))
            self._nested.add(file)
            return False
        for f in (file, *self._nested) if self._nested else (file,):
            m = mtime if f is file and mtime is not None else _mtime(f)
            fresh = fresh or self._mtimes.get(f, m) != m
            self._mtimes[f] = m
        return fresh

    def _ended(self, call_id: str, held: list[Any], deadline: float, limits: Any) -> Outcome:
        """The process ended while this call's ctx call ran a nested one: its result if it had
        already returned (a caller that did not wait), else how the process ended."""
        for msg, payload in held:
            if msg.get("t") == "done":
                return self._outcome(msg, payload, "", limits)
        return self._died(deadline)

    def _died(self, deadline: float) -> Outcome:
        if self.proc is None and self._death is not None:  # a nested call saw it end first
            return Outcome(error=self._death)
        timed_out = time.monotonic() >= deadline and self.proc is not None and alive(self.proc)
        killed = self._watch.killed if self._watch is not None else None
        logs = self.stop()
        if killed is not None:
            err = self._memory_error(killed)
        elif timed_out:
            err = WorkbenchError(
                "E_TIMEOUT",
                f"the call ran over {self.options.timeout:g} s and "
                "the sandbox was killed; the next call gets a fresh one",
                limit=self.options.timeout,
            )
        elif "out of memory" in logs.lower():
            err = WorkbenchError(
                "E_OUT_OF_MEMORY",
                f"the sandbox ran out of memory (V8 heap "
                f"limit {self.options.memory_mb} MB) and was restarted",
                limit=self.options.memory_mb,
            )
        else:
            err = WorkbenchError(
                "E_SANDBOX",
                "the Deno sandbox process died during the call; the next call gets a fresh one",
                capability="process",
            )
        self._death = err
        if not self._active or len(self._active) == 1:  # (not under an outer call: it sees the death)
            self.warm()  # the next call's sandbox starts now, in the background
        return Outcome(error=err, logs=logs)

    def _memory_error(self, size: int, when: str = "") -> WorkbenchError:
        """The sandbox was killed for its resident size `size` (bytes): guard.py."""
        mb, limit = self.options.memory_mb, rss_limit_mb(self.options.memory_mb)
        return WorkbenchError(
            "E_OUT_OF_MEMORY",
            f"the sandbox's memory ({size >> 20} MB resident: V8 heap, ArrayBuffers and Workers "
            f"together) went over its limit of {limit} MB (2 x memory_mb {mb} + {RUNTIME_MB} MB)"
            f"{when} and it was killed; the next call gets a fresh one",
            limit=mb,
            rss_limit_mb=limit,
            rss_mb=size >> 20,
        )

    def _recycled(self, proc: subprocess.Popen[bytes], began: bool, deadline: float) -> bool:
        """Whether the host ended on its own (RECYCLED: the last call left its Worker busy,
        host.ts) before it read this call, which can then run in a fresh process."""
        if began or self.proc is not proc or time.monotonic() >= deadline:
            return False
        try:
            code = proc.wait(min(2.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        if code != RECYCLED:
            return False
        self.stop()
        return True

    def _ended_between(self) -> None:
        """Before a restart: why the process ended after the last call, if it ended on its own
        (the next top call reports it as a warning)."""
        w = self._watch
        if w is not None and w.killed is not None:
            when = " between calls (what earlier calls kept: module state, ArrayBuffers)"
            self._between.append(self._memory_error(w.killed, when).message)
        elif w is not None and w.spun is not None:
            self._between.append(
                f"the sandbox wanted {w.spun:.1f} CPU-s/s with no call running (something an "
                "earlier call left running, e.g. an async loop) and was killed; this call runs "
                "in a fresh one"
            )

    def _outcome(self, msg: dict[str, Any], payload: bytes | None, logs: str, limits: Any) -> Outcome:
        if payload is None:  # over bridge_message_bytes: the host never sends that
            return Outcome(
                error=WorkbenchError(
                    "E_TOO_LARGE",
                    "the tool's result message is over the bridge's limit "
                    f"({limits.bridge_message_bytes:,} bytes)",
                    limit=limits.bridge_message_bytes,
                ),
                logs=logs,
            )
        text = payload.decode("utf-8", "replace")
        if msg.get("ok") is True:  # N9 is checked on this text by the call pipeline, as for Python
            return Outcome(json=text, logs=logs, warnings=_late(msg.get("late")))
        try:
            error = json.loads(text)
        except (ValueError, RecursionError):
            error = None
        return Outcome(error=self._error(error if isinstance(error, dict) else {}, limits), logs=logs)

    def _error(self, e: dict[str, Any], limits: Any = DEFAULT_LIMITS) -> WorkbenchError:
        """The tool's error as a coded one; never raises (errors.tool_error)."""
        return tool_error(e, self.gem_root, limits)


def _input_too_large(size: int, limit: int) -> WorkbenchError:
    return WorkbenchError(
        "E_TOO_LARGE",
        f"the input is {size:,} bytes as JSON; one message to the sandbox holds at most "
        f"{limit:,} bytes (limit bridge_message_bytes)",
        size=size,
        limit=limit,
    )


def _message(
    file: str, fresh: bool, nonce: str, caps: Capabilities, nested: bool, n: int, shape: Any
) -> dict[str, Any]:
    """A call's message to the host (host.ts has the protocol): the tool, its ctx shape and
    values, its limits, and the clock and randomness it sees."""
    session = caps.session
    profile, grants, limits = session.profile, session.grants, session.limits
    values = _session_values(session)
    return {
        "t": "call",
        "id": session.call_id,
        "file": file,
        "fresh": fresh,
        "nonce": nonce,
        "limit": limits.bridge_message_bytes,
        "ctx": {
            **shape(profile.js_shape(grants)),
            "values": profile.values(grants, session),
            "tool": session.tool.name,  # the element of entry.js_member to run
            **profile.entry.message,
        },
        "resultChars": limits.result_chars,
        "n": n,
        **_determinism(*values),
        **({} if nested else _clock_reads(session, values[2])),
    }


def _session_values(session: Any) -> tuple[Any, Any, Any]:
    """The bench's virtual clock and seed for a call: (clock_ms, clock_frozen, seed) of its
    CallSession (None, False, None there when the bench uses real time and randomness). A
    call without a seed draws from its id seed: the one its pin keeps, so its replay repeats
    its Math.random and crypto draws."""
    seed = getattr(session, "seed", None)
    return (
        getattr(session, "clock_ms", None),
        getattr(session, "clock_frozen", False),
        seed if seed is not None else getattr(session, "ids_seed", None),
    )


def _clock_reads(session: Any, seed: Any) -> dict[str, Any]:
    """What a top call's message says for its pin: a replay's clock reads, to serve again
    ("ticks"); on the wall clock, a call that can be pinned asks for its reads and start
    ("wall"): the tool sees the wall time, and its pin keeps what it saw (`_took`); a seed of
    its own (`seed` is the id seed it sends: "ownSeed")."""
    out: dict[str, Any] = {}
    if (
        seed is not None
        and getattr(session, "seed", None) is None
        and seed == getattr(session, "ids_seed", None)
    ):
        out["ownSeed"] = True  # its own seed, for its pin: node:crypto's require() not preloaded
    ticks = getattr(session, "ticks", None)
    if ticks:
        out["ticks"] = ticks
    elif getattr(session, "clock_ms", None) is None and getattr(session, "keeps_reads", False):
        out["wall"] = True
    return out


def _took(session: Any, ticks: Any, start: Any) -> None:
    """The running clock's reads the sandbox reports (ms since the call's start, worker/clock.ts
    `taken`) and, on the wall clock, the time it started at: kept on the session for the
    call's pin; anything else is dropped."""
    if not hasattr(session, "ticks"):
        return
    ok = isinstance(ticks, list) and all(type(t) in (int, float) and math.isfinite(t) for t in ticks)
    session.ticks = [float(t) for t in ticks[:MAX_TICKS]] if ok else None
    wall = type(start) in (int, float) and math.isfinite(start) and 0 <= start <= _DATE_MAX_MS
    if ok and wall and session.clock_ms is None:
        session.clock_ms, session.clock_frozen = float(start), False


_DATE_MAX_MS = 8.64e15  # a Date's time value is at most this far from the epoch (ECMA-262)


def _determinism(clock_ms: Any, frozen: Any, seed: Any) -> dict[str, Any]:
    """What a call message says of the clock and randomness the tool sees (worker/clock.ts,
    random.ts): "clock" [ms since the epoch at the call's start, frozen] and "seed" (a
    uint32, the 32-bit two's complement of the int) when set; nothing when not, so a call on
    real time and randomness carries the same message as before."""
    out: dict[str, Any] = {}
    if clock_ms is not None:
        ms = float(clock_ms)
        if not (math.isfinite(ms) and abs(ms) <= _DATE_MAX_MS):
            raise ValueError(f"clock_ms {clock_ms!r} is not a time a Date can hold")
        out["clock"] = [ms, bool(frozen)]
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
        out["seed"] = seed & 0xFFFFFFFF
    return out


def _late(late: Any) -> list[str]:
    """The warning for ctx calls the tool did not wait for (worker/ctxcall.ts `late`: [count, names])."""
    if not (isinstance(late, list) and len(late) == 2 and type(late[0]) is int and late[0] > 0):
        return []
    names = [n for n in late[1] if isinstance(n, str)][:5] if isinstance(late[1], list) else []
    more = f" and {late[0] - len(names)} more" if late[0] > len(names) else ""
    return [
        f"the tool returned while {late[0]} ctx call{'s' if late[0] > 1 else ''} it made had not "
        f"completed ({', '.join(names)}{more}): a missing `await`? The platform may end the call "
        "before they run; here they completed after the tool returned"
    ]


def _nests(caps: Capabilities, msg: dict[str, Any]) -> bool:
    """Whether a ctx message runs a tool (ctx.tools.<name>): it would nest another call."""
    return str(msg.get("method")).rpartition(".")[0] in caps.session.profile.dispatch


def _mtime(file: Path) -> int:
    try:
        return file.stat().st_mtime_ns
    except OSError:
        return -1  # gone: counts as changed, and the import says what is missing


def _gone() -> WorkbenchError:
    return WorkbenchError("E_SANDBOX", "the Deno sandbox ended during this invocation", capability="process")
