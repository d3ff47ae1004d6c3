"""N9 counts a result the way the platform's JSON.stringify writes it, for Python and JS tools."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import GemBuilder

import workbench
from workbench._json import js_number

SAMPLES = [
    1.0,
    1.5,
    123.456,
    1e16,
    1e21,
    1.5e21,
    1e-5,
    1.5e-7,
    0.1,
    1e-7,
    1e-6,
    5e-324,
    1.7976931348623157e308,
    -0.0001,
    -2.5e-8,
    0.30000000000000004,
    1e20,
    -0.0,
    100.0,
]


def test_N9_js_number_matches_deno() -> None:
    from deno import find_deno_bin

    out = subprocess.run(
        [find_deno_bin(), "eval", f"console.log(JSON.stringify({json.dumps(SAMPLES)}.map(String)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert [js_number(x) for x in SAMPLES] == json.loads(out.stdout)


@pytest.mark.parametrize(
    "n, item, ok",
    [(300_000, 1.0, True), (60_000, 1e16, False), (140_000, 1e-5, False), (149_000, 1.5e-7, True)],
)
def test_N9_python_and_js_count_floats_alike(
    gem: GemBuilder, tmp_path, n: int, item: float, ok: bool
) -> None:
    """JS writes 1.0 as "1", 1e16 as "10000000000000000", 1e-5 as "0.00001", 1.5e-7 as "1.5e-7";
    Python's json as "1.0", "1e+16", "1e-05", "1.5e-07": each case is over N9 in one and under
    it in the other."""
    gem.tool("py", f"def handle(i, ctx): return [{item!r}] * {n}")
    gem.tool("js", f"export default () => new Array({n}).fill({item!r})", ext="js")
    with workbench.open(gem.write(), state_dir=tmp_path / "state") as bench:
        results = [bench.call(t) for t in ("py", "js")]
    assert [r.ok for r in results] == [ok, ok], [r.error for r in results]
    if not ok:
        assert results[0].error.details["size"] == results[1].error.details["size"]
    else:
        assert results[0].value == results[1].value


def test_N9_the_limit_is_the_benchs_and_can_be_shrunk_for_a_test(gem: GemBuilder, tmp_path) -> None:
    from workbench.ctx.limits import Limits

    gem.tool("py", "def handle(i, ctx): return 'x' * i['n']")
    gem.tool("js", "export default (i) => 'x'.repeat(i.n)", ext="js")
    with workbench.open(gem.write(), state_dir=tmp_path / "state", limits=Limits(result_chars=100)) as bench:
        for tool in ("py", "js"):
            assert bench.call(tool, {"n": 98}).ok  # 100 characters with the quotes
            err = bench.call(tool, {"n": 99}).error
            assert err is not None and err.code == "E_RESULT_TOO_LARGE"
            assert err.details["limit"] == 100 and err.details["size"] == 101
