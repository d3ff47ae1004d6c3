"""workbench.debug.sourcemap: a version 3 map read both ways (a TS line to the generated
position a breakpoint needs, a generated position to its TS line), on Deno's own output and
on hand-made maps; hostile maps (huge, malformed VLQ, indices out of range) end in a bounded,
coded E_SOURCEMAP."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from workbench.debug import SourceMap, SourceMapError
from workbench.debug import sourcemap as sm

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def vlq(n: int) -> str:
    """One number in base64 VLQ (the encoder the decoder is checked against)."""
    v = (-n << 1) | 1 if n < 0 else n << 1
    out = ""
    while True:
        digit, v = v & 31, v >> 5
        out += _B64[digit | (32 if v else 0)]
        if not v:
            return out


def mapping(lines: list[list[tuple[int, ...]]]) -> str:
    """Absolute segments per generated line, encoded relative as the format has them."""
    prev = [0, 0, 0, 0]
    out = []
    for segs in lines:
        col = 0
        parts = []
        for seg in segs:
            fields = [seg[0] - col]
            col = seg[0]
            if len(seg) > 1:
                fields += [seg[i] - prev[i] for i in (1, 2, 3)]
                prev[1:4] = seg[1:4]
            parts.append("".join(vlq(f) for f in fields))
        out.append(",".join(parts))
    return ";".join(out)


def test_vlq_round_trips_through_the_decoder() -> None:
    for n in (0, 1, -1, 15, 16, -16, 31, 32, 1000, -1000, 2**20, -(2**20), 2**30):
        assert sm._vlq(vlq(n), 0) == [n]
    assert sm._vlq("AAgBC", 0) == [0, 0, 16, 1]


def test_a_hand_made_map_both_ways() -> None:
    text = json.dumps(
        {
            "version": 3,
            "sources": ["file:///g/tools/a.ts", "file:///g/tools/b.ts"],
            "names": [],
            "mappings": mapping([[(0, 0, 0, 0)], [], [(2, 0, 5, 4), (10, 0, 6, 0)], [(0, 1, 3, 0)]]),
        }
    )
    m = SourceMap.from_json(text)
    assert m.original(0, 0) == sm.Position("file:///g/tools/a.ts", 0, 0)
    assert m.original(1, 0) is None  # a line that maps nothing
    assert m.original(2, 7) == sm.Position("file:///g/tools/a.ts", 5, 4)  # the segment before col 7
    assert m.original(2, 12).line == 6
    assert m.original(3, 0) == sm.Position("file:///g/tools/b.ts", 3, 0)
    assert m.original(99, 0) is None
    assert m.generated("tools/a.ts", 5) == (2, 2)
    assert m.generated("file:///g/tools/a.ts", 1) == (2, 2)  # a line mapping nothing: the next that does
    assert m.generated("tools/b.ts", 3) == (3, 0)
    assert m.generated("tools/b.ts", 4) is None  # past its end
    assert m.generated("tools/c.ts", 0) is None  # no such source
    assert m.generated("a.ts", 0) == (0, 0)  # the end of one source's name


def test_source_root_and_a_percent_encoded_data_url() -> None:
    data = {"version": 3, "sourceRoot": "file:///g/", "sources": ["t.ts"], "mappings": "AAAA"}
    from urllib.parse import quote

    m = SourceMap.from_url("data:application/json," + quote(json.dumps(data)))
    assert m.sources == ("file:///g/t.ts",)


TS = """\
// a comment
interface Input {
  a: number;
}
type Pair = [number, number];

export default async function run(input: Input): Promise<number> {
  const pair: Pair = [input.a, 2];
  const total = pair[0] + pair[1];
  return total;
}
"""


def test_an_inline_map_at_a_scripts_end(tmp_path: Path) -> None:
    """A script as Deno hands it to V8 (the map inline at its end; Deno's own are read in
    tests/test_debug_inspect.py): each TS line of code maps to a generated line that maps back."""
    src = tmp_path / "t.ts"
    src.write_text(TS)
    text = (
        "function run(input) {\n  const pair = [input.a, 2];\n  const total = pair[0] + pair[1];\n"
        "  return total;\n}\n"
    )
    segs = [[(0, 0, 6, 0)], [(2, 0, 7, 2)], [(2, 0, 8, 2)], [(2, 0, 9, 2)], [(0, 0, 10, 0)]]
    url = (
        "data:application/json;base64,"
        + base64.b64encode(
            json.dumps({"version": 3, "sources": [src.as_uri()], "mappings": mapping(segs)}).encode()
        ).decode()
    )
    m = SourceMap.from_script(text + "//# sourceMappingURL=" + url)
    assert m is not None
    for line in (6, 7, 8, 9):
        g = m.generated("t.ts", line)
        assert g is not None and m.original(*g).line == line
    assert SourceMap.from_script(text) is None  # no map: a plain .js module
    assert SourceMap.from_script(text + "//# sourceMappingURL=t.js.map") is None  # a file: not read


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not JSON"),
        ("[]", "version 3"),
        ('{"version": 2, "sources": [], "mappings": ""}', "version 3"),
        ('{"version": 3, "sources": [1], "mappings": ""}', "sources"),
        ('{"version": 3, "sources": ["a"], "mappings": 5}', "mappings"),
        ('{"version": 3, "sources": ["a"], "mappings": "AA!A"}', "no base64 digit"),
        ('{"version": 3, "sources": ["a"], "mappings": "AAAg"}', "cut short"),
        ('{"version": 3, "sources": ["a"], "mappings": "gggggggggA"}', "over 7 digits"),
        ('{"version": 3, "sources": ["a"], "mappings": "AA"}', "2 fields"),
        ('{"version": 3, "sources": ["a"], "mappings": "ACAA"}', "out of range"),
        ('{"version": 3, "sources": ["a"], "mappings": "AAFA"}', "out of range"),
        ('{"version": 3, "sources": ["a"], "mappings": "FAAA"}', "out of range"),
    ],
)
def test_hostile_maps_are_coded_errors(text: str, words: str) -> None:
    with pytest.raises(SourceMapError) as info:
        SourceMap.from_json(text)
    assert info.value.code == "E_SOURCEMAP" and words in info.value.message


def test_hostile_data_urls() -> None:
    with pytest.raises(SourceMapError, match="not a data: URL"):
        SourceMap.from_url("file:///etc/passwd")
    with pytest.raises(SourceMapError, match="base64"):
        SourceMap.from_url("data:application/json;base64,@@@")
    with pytest.raises(SourceMapError, match="at most"):
        SourceMap.from_url("data:application/json;base64," + "A" * (sm.MAX_MAP_BYTES * 2))


def test_size_and_segment_bounds_hold_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SourceMapError, match="at most") as info:
        SourceMap.from_json(b" " * (sm.MAX_MAP_BYTES + 1))
    assert info.value.details["limit"] == sm.MAX_MAP_BYTES
    monkeypatch.setattr(sm, "MAX_SEGMENTS", 1000)
    text = json.dumps({"version": 3, "sources": ["a"], "mappings": ";".join(["AAAA"] * 2000)})
    started = time.monotonic()
    with pytest.raises(SourceMapError, match="over 1,000 segments"):
        SourceMap.from_json(text)
    assert time.monotonic() - started < 1
    deep = "[" * 100_000 + "]" * 100_000  # nesting: refused, not a RecursionError
    with pytest.raises(SourceMapError):
        SourceMap.from_json(deep)
