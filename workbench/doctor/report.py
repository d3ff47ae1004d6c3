"""The doctor's report (issue 30 point 1): a DataFrame of findings, an HTML summary per tool in
the notebook, JSON and JUnit XML for CI."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .findings import KINDS, Finding

if TYPE_CHECKING:
    import pandas as pd

    from .run import ToolStats

COLUMNS = ["tool", "kind", "rule", "input", "start", "message", "repro", "case"]


#: what XML 1.0 has no character for: C0 controls but tab and line ends, surrogates, U+FFFE/F
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """`text` with each character XML cannot hold written as its code (`\\x00`, `\\ud800`), so
    any message makes a well-formed report."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _crash_said(crash: tuple[int, int] | None) -> str | None:
    """N7's crash points as the summary says them: "12 of 350 (sampled)", "3 of 3"."""
    if crash is None:
        return None
    return f"{crash[0]} of {crash[1]}" + (" (sampled)" if crash[0] < crash[1] else "")


def _row(f: Finding) -> dict[str, Any]:
    """A finding as a row of the report: its columns, and what its kind is."""
    return {
        "tool": f.tool,
        "kind": f.kind,
        "rule": f.rule,
        "what": KINDS[f.kind][1],
        "input": f.input,
        "start": f.start,
        "message": f.message,
        "repro": f.repro,
        "case": str(f.case) if f.case else None,
    }


@dataclass
class DoctorReport:
    """What `bench.doctor()` found: `findings`, `frame()` (one row each), `ok`, per-tool stats."""

    gem: str
    findings: list[Finding]
    stats: dict[str, ToolStats]
    seconds: float
    seed: int
    stopped: bool = False  # the run's time (seconds=) ended it before its search was done
    budget: float | None = None  # its seconds=
    sequence_seconds: float = 0.0  # of the sequences over the gem's tools
    longest_call: float = 0.0  # seconds of its longest call (how far past its budget it may run)
    loading: float = 0.0  # importing the search's libraries, the first time in a process
    seeds: int = 0  # strings the gem knew that its search started from (seeds.py)

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings

    def frame(self) -> pd.DataFrame:
        """One row per finding: tool, kind, rule, the shrunk input, the start state, what
        happened, how to reproduce it and its pinned case."""
        import pandas as pd

        rows = [{k: v for k, v in _row(f).items() if k in COLUMNS} for f in self.findings]
        return pd.DataFrame(rows, columns=COLUMNS)

    def summary(self) -> list[dict[str, Any]]:
        """Per tool: examples run (and of them invalid), findings by kind, seconds."""
        out = []
        for name, s in self.stats.items():
            kinds = Counter(f.kind for f in self.findings if f.tool == name)
            out.append(
                {
                    "tool": name,
                    "examples": s.examples,
                    "invalid": s.invalid,
                    "findings": dict(sorted(kinds.items())),
                    "seconds": round(s.seconds, 2),
                    "probe_seconds": round(s.probe_seconds, 2),
                    "pin_seconds": round(s.pin_seconds, 2),
                    "crash_points": _crash_said(s.crash),
                }
            )
        return out

    def timing(self) -> dict[str, float]:
        """Where the run's time went, in seconds: loading its libraries (the first run in a
        process), searching the tools (drawing, calling and shrinking), probing what ran (N5,
        determinism, N7), sequences, pinning the findings, and the rest (setting up, putting
        the bench back); they add up to `total`. With `budget` (its seconds=) and
        `longest_call`: past its loading, a run ends within the budget plus about one call."""
        parts = {
            "loading": self.loading,
            "searching": sum(s.seconds for s in self.stats.values()),
            "probes": sum(s.probe_seconds for s in self.stats.values()),
            "sequences": self.sequence_seconds,
            "pinning": sum(s.pin_seconds for s in self.stats.values()),
        }
        parts["other"] = max(0.0, self.seconds - sum(parts.values()))
        out = {k: round(v, 2) for k, v in parts.items()}
        out["total"] = round(self.seconds, 2)
        out["longest_call"] = round(self.longest_call, 2)
        if self.budget is not None:
            out["budget"] = round(self.budget, 2)
        return out

    @property
    def time_said(self) -> str:
        """The timing as one line: "time: searching 5.1 s, probes 1.2 s, …; 9.0 s in all (budget
        10 s)"; a part under 0.05 s is left out."""
        t = self.timing()
        parts = ", ".join(
            f"{k} {t[k]:.1f} s"
            for k in ("loading", "searching", "probes", "sequences", "pinning", "other")
            if t[k] >= 0.05
        )
        budget = f" (budget {t['budget']:g} s)" if "budget" in t else ""
        return f"time: {parts or 'none'}; {t['total']:.1f} s in all{budget}"

    def to_json(self) -> dict[str, Any]:
        return {
            "gem": self.gem,
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
            "ok": self.ok,
            "stopped": self.stopped,
            "tools": self.summary(),
            "timing": self.timing(),
            "seeds": self.seeds,
            "findings": [_row(f) for f in self.findings],
            "note": self.note,
        }

    @property
    def note(self) -> str:
        """What bounded the run: its time, and the crash points sampled (N7)."""
        parts = ["stopped when its time (seconds=) ran out"] if self.stopped else []
        parts += [
            f"{name}: N7 crashed {s.crash[0]} of {s.crash[1]} ctx calls (sampled)"
            for name, s in self.stats.items()
            if s.crash and s.crash[0] < s.crash[1]
        ]
        return "; ".join(parts)

    def junit(self, path: str | os.PathLike[str]) -> Path:
        """Write JUnit XML: a testcase per tool and kind checked, failed where found."""
        from xml.sax.saxutils import escape, quoteattr

        def attr(text: str) -> str:
            return quoteattr(_xml_safe(text))

        lines = []
        cases = 0
        for name in self.stats:
            mine = {f.kind: f for f in self.findings if f.tool == name}
            for kind in KINDS:
                cases += 1
                head = f"  <testcase classname={attr(f'doctor.{self.gem}.{name}')} name={attr(kind)}"
                f = mine.get(kind)
                if f is None:
                    lines.append(head + "/>")
                else:
                    text = f"{f.message}\ninput: {json.dumps(f.input, ensure_ascii=False)[:2000]}\n{f.repro}"
                    body = escape(_xml_safe(text))
                    message = attr(f"{f.rule}: {f.message}"[:500])
                    lines.append(f"{head}><failure message={message}>{body}</failure></testcase>")
        xml = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            f'<testsuite name={attr("gem-workbench doctor " + self.gem)} tests="{cases}" '
            f'failures="{len(self.findings)}" time="{self.seconds:.2f}">\n'
            + "\n".join(lines)
            + "\n</testsuite>\n"
        )
        target = Path(path)
        fd, tmp = tempfile.mkstemp(
            dir=target.parent if str(target.parent) else ".", prefix=".junit.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(xml)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def __repr__(self) -> str:
        n = sum(s.examples for s in self.stats.values())
        return (
            f"<DoctorReport {self.gem}: {len(self.findings)} findings, {n} examples in {self.seconds:.1f} s>"
        )

    def _repr_html_(self) -> str:
        from .report_html import report_html

        return report_html(self)
