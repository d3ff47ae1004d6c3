"""K3: an Ekanos `pattern` means what it means to JavaScript (`new RegExp(p, 'u')`), checked in
linear time. One table (ecma_pattern_cases.json) drives both sides: V8 in Deno and the
workbench's translation to RE2 must agree on every pattern × string, and on what is refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_ekanos import integration, tool

import workbench
from workbench import GemLoadError
from workbench.gem.ecma_pattern import PatternError, compile_pattern, matches

pytestmark = pytest.mark.deno
CASES = json.loads((Path(__file__).parent / "ecma_pattern_cases.json").read_text())
# Classes compared on every code point (not \p{…}: V8's and RE2's Unicode versions differ)
EVERY = [r"\s", r"\S", r"\d", r"\D", r"\w", r"\W", r".", r"[^]", r"[\s\S]", r"[^\s\d]"]

V8 = """
const cases = JSON.parse(Deno.args[0]);
const out = { accept: [], refuse: {}, every: {} };
for (const p of cases.accept) {
  const re = new RegExp(p, cases.flags);
  out.accept.push(cases.strings.map((s) => re.test(s)));
}
for (const [why, list] of Object.entries(cases.refuse))
  out.refuse[why] = list.map((p) => { try { new RegExp(p, cases.flags); return true; } catch { return false; } });
for (const p of cases.every) {
  const re = new RegExp('^' + p + '$', cases.flags), ranges = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c < 0xe000) continue;
    if (!re.test(String.fromCodePoint(c))) continue;
    const last = ranges[ranges.length - 1];
    if (last && (last[1] === c - 1 || (last[1] === 0xd7ff && c === 0xe000))) last[1] = c; else ranges.push([c, c]);
  }
  out.every[p] = ranges;
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def v8(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What V8 (Deno's) says of the table: matches, which patterns compile, class ranges."""
    from deno import find_deno_bin

    tmp = tmp_path_factory.mktemp("v8")
    script = tmp / "v8.js"
    script.write_text(V8)
    out = subprocess.run(
        [find_deno_bin(), "run", "--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote"]
        + [str(script), json.dumps({**CASES, "every": EVERY})],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DENO_DIR": str(tmp / "deno"), "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _ranges(pattern: str) -> list[list[int]]:
    """The code points the workbench's `pattern` (one character wide) matches, as V8's side
    lists them: runs of it over a text of every code point but the surrogates."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    at = lambda i: i if i < 0xD800 else i + 0x800  # noqa: E731 - index in `every` → code point
    ranges: list[list[int]] = []
    for m in compile_pattern(f"(?:{pattern})+").finditer(every):
        lo, hi = at(m.start()), at(m.end() - 1)
        if ranges and ranges[-1][1] == 0xD7FF and lo == 0xE000:
            ranges[-1][1] = hi
        else:
            ranges.append([lo, hi])
    return ranges


def test_K3_pattern_matches_agree_with_v8(v8: dict[str, Any]) -> None:
    strings = CASES["strings"]
    mine = [[matches(p, s) for s in strings] for p in CASES["accept"]]
    differ = [
        (p, s, theirs[j])
        for p, ours, theirs in zip(CASES["accept"], mine, v8["accept"], strict=True)
        for j, s in enumerate(strings)
        if ours[j] != theirs[j]
    ]
    assert differ == []
    assert len(mine) == len(CASES["accept"]) > 70


@pytest.mark.parametrize("pattern", EVERY)
def test_K3_pattern_classes_agree_with_v8_on_every_code_point(v8: dict[str, Any], pattern: str) -> None:
    assert _ranges(pattern) == v8["every"][pattern]


def test_K3_pattern_refusals_agree_with_v8(v8: dict[str, Any]) -> None:
    """What V8 refuses is refused; what it accepts but RE2 cannot check in linear time (or has no
    Unicode data for) is refused too, with the reason; nothing else."""
    for why, patterns in CASES["refuse"].items():
        assert v8["refuse"][why] == [why != "js"] * len(patterns), why
        for p in patterns:
            with pytest.raises(PatternError):
                compile_pattern(p)
    linear = [str(_reason(p)) for p in CASES["refuse"]["linear"][:6]]
    assert all("linear time" in r for r in linear), linear


def _reason(pattern: str) -> PatternError:
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return exc
    raise AssertionError(f"{pattern!r} accepted")


# -- through an integration: at load and at call ----------------------------------------------------


def _params(**patterns: str) -> str:
    props = ", ".join(f"{k}: {{ type: 'string', pattern: {json.dumps(v)} }}" for k, v in patterns.items())
    return f"{{ type: 'object', properties: {{ {props} }} }}"


def test_K3_ecmascript_pattern_at_call(tmp_path: Path, opened: Callable) -> None:
    params = _params(sp=r"^\s$", letters=r"^\p{Letter}+$", d=r"^\p{digit}$", c=r"^\cC$", nest=r"^(\s+)+$")
    bench = opened(integration(tmp_path / "i", tool("p", "return { ok: true };", params=params)))
    for ws in ("\u00a0", "\u2003", "\ufeff", "\u2029", "\u000b"):
        assert bench.call("p", {"sp": ws}).ok, repr(ws)
    assert bench.call("p", {"letters": "Ωmega", "d": "\u0663", "c": "\x03"}).ok
    bad = bench.call("p", {"sp": "\u200b"})  # ZWSP is not WhiteSpace in JavaScript
    assert bad.error is not None and bad.error.code == "E_SCHEMA" and "sp" in bad.error.message
    slow = bench.call("p", {"nest": " " * 50_000 + "!"})  # catastrophic for a backtracking engine
    assert slow.error is not None and slow.error.code == "E_SCHEMA"
    lone = bench.call("p", {"letters": "a\ud800"})  # a lone surrogate is U+FFFD, not a letter
    assert lone.error is not None and lone.error.code == "E_SCHEMA"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(?<=\$)\d+", "lookaround cannot be checked in linear time"),
        (r"(a)\1", "backreferences cannot be checked in linear time"),
        (r"\p{Greek}", "scripts need Script="),
        (r"a{", "a lone {"),
    ],
)
def test_K3_unusable_pattern_is_a_load_error_naming_it(tmp_path: Path, pattern: str, reason: str) -> None:
    root = integration(tmp_path / "i", tool("p", "return {};", params=_params(x=pattern)))
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert err.value.details["pointer"] == "tools.0.parameters.properties.x.pattern"
    assert reason in err.value.message and repr(pattern) in err.value.message
