"""An integration's TS tests (K7): the vitest shim, run_ts_tests (deno test in the sandbox's
rules) and `gem-workbench test`, which reports each TS test case as a pytest item."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench._tstests import run_ts_tests
from workbench.runners.deno.testrun import OUTPUT_LIMIT

pytestmark = pytest.mark.deno
ROOT = Path(__file__).resolve().parent.parent
ACME = ROOT / "notebooks" / "gems" / "acme-payments"
SEED = Path("/work/shared/seeds/003_537cf7f600d98dad.txt")


def integration(tmp_path: Path, **tests: str) -> Path:
    """A minimal integration folder with tests/<name>.test.ts files."""
    folder = tmp_path / "demo"
    (folder / "tests").mkdir(parents=True)
    (folder / "integration.ts").write_text(
        "import { defineIntegration } from '@ekanos/sdk';\n"
        "export default defineIntegration({ slug: 'demo', tools: [{ name: 'ping', description: 'Ping.',"
        " outputExample: { ok: true }, run: async () => ({ ok: true }) }] });\n"
    )
    for name, body in tests.items():
        (folder / "tests" / f"{name}.test.ts").write_text(textwrap.dedent(body))
    return folder


def run(folder: Path, tmp_path: Path, timeout: float = 60) -> dict[str, object]:
    cases = run_ts_tests(folder, deno_dir=tmp_path / "deno", timeout=timeout)
    return {c.name: c for c in cases}


SHIM = """
import { describe, it, test, expect, beforeEach, afterEach } from 'vitest';
const order: string[] = [];
describe('outer', () => {
  beforeEach(() => { order.push('before outer'); });
  afterEach(() => { order.push('after outer'); });
  describe('inner', () => {
    beforeEach(() => { order.push('before inner'); });
    it('hooks run outer first, then inner, and back', () => {
      expect(order).toEqual(['before outer', 'before inner']);
    });
  });
  test('passing matchers', async () => {
    expect({ a: 1, b: undefined, c: [1, { d: new Date(0) }] }).toEqual({ a: 1, c: [1, { d: new Date(0) }] });
    expect({ a: 1 }).toStrictEqual({ a: 1 });
    expect({ a: 1, b: { c: 2, d: 3 }, e: [{ f: 1, g: 2 }] }).toMatchObject({ b: { c: 2 }, e: [{ f: 1 }] });
    expect(NaN).toBe(NaN); expect(null).toBeNull(); expect(undefined).toBeUndefined(); expect(0).toBeDefined();
    expect('x').toBeTruthy(); expect('').toBeFalsy(); expect([1, 2]).toContain(2); expect('abc').toContain('b');
    expect([1, 2, 3]).toHaveLength(3); expect(2).toBeGreaterThan(1); expect(1).toBeLessThan(2);
    expect(() => { throw new TypeError('bad thing'); }).toThrow('bad'); expect(() => { throw new TypeError('x'); }).toThrow(TypeError);
    expect(() => { throw new Error('abc'); }).toThrow(/b/); expect(() => 1).not.toThrow();
    expect({ a: 1 }).not.toEqual({ a: 2 }); expect({ n: 1, s: 'x' }).toEqual({ n: expect.any(Number), s: expect.anything() });
    await expect(Promise.resolve(3)).resolves.toBe(3); await expect(Promise.reject(new Error('no'))).rejects.toThrow('no');
    await expect(Promise.resolve(1)).resolves.not.toBe(2);
    const cyc: any = { a: 1 }; cyc.self = cyc; const cyc2: any = { a: 1 }; cyc2.self = cyc2; expect(cyc).toEqual(cyc2);
  });
});
it('fails toEqual', () => { expect({ temperature: 12.4 }).toEqual({ temperature: 13 }); });
it('fails toStrictEqual on undefined keys', () => { expect({ a: undefined }).toStrictEqual({}); });
it('fails toBe on distinct objects', () => { expect({}).toBe({}); });
it('fails not.toContain', () => { expect([1, 2]).not.toContain(2); });
it('fails toThrow when nothing is thrown', () => { expect(() => 1).toThrow(); });
it('fails toThrow on the wrong class', () => { expect(() => { throw new Error('x'); }).toThrow(TypeError); });
it('fails toHaveLength', () => { expect('abc').toHaveLength(2); });
it('fails toMatchObject', () => { expect({ a: { b: 1 } }).toMatchObject({ a: { b: 2 } }); });
it('fails resolves on a rejection', async () => { await expect(Promise.reject(new Error('boom'))).resolves.toBe(1); });
it('fails rejects on a resolution', async () => { await expect(Promise.resolve(5)).rejects.toThrow(); });
it('fails toBeGreaterThan', () => { expect(1).toBeGreaterThan(2); });
it('fails a timeout', async () => { await new Promise((r) => setTimeout(r, 500)); }, 50);
it.skip('is skipped', () => { throw new Error('never'); });
it.todo('is a todo');
describe.skip('skipped suite', () => { it('inside', () => { throw new Error('never'); }); });
"""


def test_K7_vitest_shim_names_hooks_and_matchers(tmp_path: Path):
    cases = run(integration(tmp_path, shim=SHIM), tmp_path)
    assert cases["outer > inner > hooks run outer first, then inner, and back"].outcome == "passed"
    assert cases["outer > passing matchers"].outcome == "passed", cases["outer > passing matchers"].message
    assert {n for n, c in cases.items() if c.outcome == "ignored"} == {
        "is skipped",
        "is a todo",
        "skipped suite > inside",
    }
    failed = {n: c.message for n, c in cases.items() if c.outcome == "failed"}
    assert len(failed) == 12 and all(n.startswith("fails ") for n in failed)
    assert "expect(received).toEqual(expected)" in failed["fails toEqual"]
    assert "Expected: { temperature: 13 }" in failed["fails toEqual"]
    assert "Received: { temperature: 12.4 }" in failed["fails toEqual"]
    assert "AssertionError" in failed["fails toEqual"]
    assert "Expected: not 2" in failed["fails not.toContain"]
    assert "did not throw" in failed["fails toThrow when nothing is thrown"]
    assert "Expected constructor: TypeError" in failed["fails toThrow on the wrong class"]
    assert "Expected length: 2" in failed["fails toHaveLength"]
    assert "rejected instead of resolved" in failed["fails resolves on a rejection"]
    assert "resolved instead of rejected" in failed["fails rejects on a resolution"]
    assert "Test timed out in 50ms." in failed["fails a timeout"]
    for name in (
        "fails toStrictEqual on undefined keys",
        "fails toBe on distinct objects",
        "fails toMatchObject",
    ):
        assert "Expected:" in failed[name] and "Received:" in failed[name], name


def test_K7_only_runs_the_marked_tests_without_failing_the_file(tmp_path: Path):
    only = "import { it } from 'vitest';\nit('a', () => {});\nit.only('b', () => {});\n"
    cases = run(integration(tmp_path, only=only), tmp_path)
    assert {n: c.outcome for n, c in cases.items()} == {"a": "ignored", "b": "passed"}


def test_K7_a_file_that_throws_at_import_fails_alone(tmp_path: Path):
    folder = integration(
        tmp_path,
        broken="import { it } from 'vitest';\nthrow new Error('broken at import');\n",
        missing="import { nope } from '../nowhere.ts';\n",
        ok="import { it } from 'vitest';\nit('fine', () => {});\n",
    )
    cases = run_ts_tests(folder, deno_dir=tmp_path / "deno", timeout=60)
    by_file = {(c.file.name, c.name): c for c in cases}
    assert by_file["ok.test.ts", "fine"].outcome == "passed"
    broken = by_file["broken.test.ts", "(uncaught error)"]
    assert broken.outcome == "failed" and "broken at import" in broken.message
    assert "nowhere.ts" in by_file["missing.test.ts", "(uncaught error)"].message


def test_N1_a_link_out_of_the_folder_fails_every_file_unrun(tmp_path: Path):
    (tmp_path / "secret.txt").write_text("private")
    folder = integration(tmp_path, leak="import { it } from 'vitest';\nit('reads', () => {});\n")
    (folder / "tests" / "peek.txt").symlink_to(tmp_path / "secret.txt")
    cases = run_ts_tests(folder, deno_dir=tmp_path / "deno", timeout=60)
    assert [(c.name, c.outcome) for c in cases] == [("(links)", "failed")] and "peek.txt" in cases[0].message


def test_N1_ts_tests_read_only_their_folder_and_the_sdk(tmp_path: Path):
    """The sandbox's rules hold for tests too: no net, env, write, run, or reads elsewhere."""
    (tmp_path / "secret.txt").write_text("s")
    probes = f"""
    import {{ it, expect }} from 'vitest';
    it('reads its folder', async () => {{ expect(await Deno.readTextFile('integration.ts')).toContain('demo'); }});
    it('no read outside', async () => {{ await expect(Deno.readTextFile({str(tmp_path / "secret.txt")!r})).rejects.toThrow(); }});
    it('no net', async () => {{ await expect(fetch('https://example.com/')).rejects.toThrow(); }});
    it('no env', () => {{ expect(() => Deno.env.get('HOME')).toThrow(); }});
    it('no write', async () => {{ await expect(Deno.writeTextFile('x.txt', 'x')).rejects.toThrow(); }});
    it('no run', () => {{ expect(() => new Deno.Command('true').outputSync()).toThrow('run access'); }});
    """
    cases = run(integration(tmp_path, probes=probes), tmp_path)
    assert {n: (c.outcome, c.message) for n, c in cases.items()} == {
        n: ("passed", "")
        for n in ("reads its folder", "no read outside", "no net", "no env", "no write", "no run")
    }
    assert not (tmp_path / "demo" / "x.txt").exists()


def test_a_hanging_file_is_stopped_at_the_timeout_with_bounded_output(tmp_path: Path):
    hang = (
        "import { it } from 'vitest';\n"
        "it('loud', () => { for (let i = 0; i < 2000; i++) console.log('x'.repeat(1000)); });\n"
        "it('hangs', () => new Promise(() => {}), 600_000);\n"
    )
    cases = run_ts_tests(integration(tmp_path, hang=hang), deno_dir=tmp_path / "deno", timeout=3)
    assert [(c.name, c.outcome) for c in cases] == [("(timeout)", "failed")]
    assert "ran over the 3 s timeout" in cases[0].message
    assert len(cases[0].message) < OUTPUT_LIMIT + 1000 and "bytes of output dropped" in cases[0].message


def cli(*args: str, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", "test", *args, "--", "-v", "-p", "no:cacheprovider"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_K7_gem_workbench_test_reports_each_ts_case(tmp_path: Path):
    out = cli("notebooks/gems/acme-payments", cwd=ROOT, tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in (
        "notebooks/gems/acme-payments/tests/weather.test.ts::get_current_weather > returns the forecast "
        "for the saved location (the seed snippet) PASSED",
        "notebooks/gems/acme-payments/tests/payments.test.ts::refund_payment > POSTs the payment id and "
        "reason as JSON PASSED",
        "notebooks/gems/acme-payments/tests/payments.test.ts::egress > a fetch outside egress throws, "
        "before any handler runs PASSED",
    ):
        assert line in out.stdout
    assert " 11 passed" in out.stdout


def test_K7_a_failing_ts_test_is_a_pytest_failure_with_its_message(tmp_path: Path):
    integration(
        tmp_path,
        ping="""
        import integration from '../integration.ts';
        import { createMockContext } from '@ekanos/sdk/testing';
        import { describe, it, expect } from 'vitest';
        describe('ping', () => {
          it('answers ok', async () => { expect(await integration.tools[0].run(createMockContext({ integration }), {})).toEqual({ ok: true }); });
          it('answers pong', async () => { expect(await integration.tools[0].run(createMockContext({ integration }), {})).toEqual({ pong: 1 }); });
        });
        """,
        broken="throw new Error('broken at import');\n",
    )
    out = cli("demo", cwd=tmp_path, tmp_path=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "tests/ping.test.ts::ping > answers ok PASSED" in out.stdout
    assert "tests/ping.test.ts::ping > answers pong FAILED" in out.stdout
    assert "tests/broken.test.ts::(uncaught error) FAILED" in out.stdout
    assert "Expected: { pong: 1 }" in out.stdout and "Received: { ok: true }" in out.stdout
    assert "broken at import" in out.stdout and "2 failed, 1 passed" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_ts_tests_are_collected_only_when_asked(tmp_path: Path):
    """Like notebooks: pytest over a tree collects *.test.ts only with --nb (or named, or nb_paths)."""
    integration(tmp_path, ok="import { it } from 'vitest';\nit('fine', () => {});\n")
    env = {**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home")}
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "demo", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == 5, plain.stdout  # no tests collected
    named = subprocess.run(
        [sys.executable, "-m", "pytest", "demo/tests/ok.test.ts", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert named.returncode == 0 and "1 passed" in named.stdout, named.stdout


def test_K7_the_seed_test_snippet_is_verbatim():
    """weather.test.ts holds every line of the seed's Testing snippet, unchanged and in order."""
    if not SEED.is_file():
        pytest.skip(f"the seed is not here ({SEED})")
    seed = SEED.read_text(encoding="utf-8")
    start = seed.index("## Testing")
    snippet = seed[seed.index("```ts", start) : seed.index("```\n", seed.index("```ts", start) + 5)]
    lines = [ln for ln in snippet.splitlines()[1:] if ln.strip()]
    ours = (ACME / "tests" / "weather.test.ts").read_text(encoding="utf-8").splitlines()
    assert lines[0] in ours  # the import line, moved to the top
    body = lines[1:]
    at = ours.index(body[0])
    assert [ln for ln in ours[at:] if ln.strip()][: len(body)] == body


def test_K7_vi_mock_and_expect_extend_fail_saying_the_shim_cannot(tmp_path: Path):
    """Module mocking needs vitest's own loader: vi.mock fails loudly, never silently does nothing."""
    folder = integration(
        tmp_path,
        top="import { vi, it } from 'vitest';\nvi.mock('../integration.ts', () => ({ default: {} }));\nit('a', () => {});\n",
        inside=(
            "import { vi, it, expect } from 'vitest';\n"
            "it('mocks', () => { vi.mock('../integration.ts'); });\n"
            "it('extends', () => { expect.extend({ toBeBig: () => ({ pass: true }) }); });\n"
        ),
    )
    cases = {(c.file.name, c.name): c for c in run_ts_tests(folder, deno_dir=tmp_path / "deno", timeout=60)}
    assert "vi.mock() is not supported" in cases["top.test.ts", "(uncaught error)"].message
    assert "vi.mock() is not supported" in cases["inside.test.ts", "mocks"].message
    assert "expect.extend() is not supported" in cases["inside.test.ts", "extends"].message


def test_K7_fake_or_stubbed_timers_cannot_stop_a_test_timing_out(tmp_path: Path):
    """The runner's own timeout keeps the real setTimeout: a test that fakes, stubs or replaces the
    timers and then hangs is still stopped at its timeout, and the next test still runs."""
    hangs = """
    import { it, vi } from 'vitest';
    it('fake timers', async () => { vi.useFakeTimers(); await new Promise(() => {}); }, 100);
    it('stubbed', async () => { vi.useRealTimers(); vi.stubGlobal('setTimeout', () => 0); await new Promise(() => {}); }, 100);
    it('replaced', async () => { (globalThis as any).setTimeout = () => 0; (globalThis as any).clearTimeout = () => {}; await new Promise(() => {}); }, 100);
    it('after', () => {});
    """
    cases = run(integration(tmp_path, hangs=hangs), tmp_path)
    for name in ("fake timers", "stubbed", "replaced"):
        assert cases[name].outcome == "failed" and "Test timed out in 100ms." in cases[name].message, name
    assert cases["after"].outcome == "passed"


def test_K7_spy_matchers_report_expected_and_received(tmp_path: Path):
    spies = """
    import { it, expect, vi } from 'vitest';
    it('with', () => { const f = vi.fn(); f('a', 1); expect(f).toHaveBeenCalledWith('a', 2); });
    it('times', () => { const f = vi.fn(); f(); expect(f).toHaveBeenCalledTimes(2); });
    it('not a spy', () => { expect(() => {}).not.toHaveBeenCalled(); });
    it('property', () => { expect({ a: { b: 1 } }).toHaveProperty('a.b', 2); });
    it('columns', () => { it.each`a | b ${1}`('x', () => {}); });
    """
    failed = {n: c.message for n, c in run(integration(tmp_path, spies=spies), tmp_path).items()}
    assert "toHaveBeenCalledWith" in failed["with"] and 'Expected: [ "a", 2 ]' in failed["with"]
    assert '1: [ "a", 1 ]' in failed["with"] and "Number of calls: 1" in failed["with"]
    assert 'Expected: "2 calls"' in failed["times"] and "Number of calls: 1" in failed["times"]
    assert "is not a spy" in failed["not a spy"]  # a TypeError, whatever the .not
    assert 'Expected path: "a.b"' in failed["property"] and "Received value: 1" in failed["property"]
    assert "1 values do not fill rows of 2 columns (a, b)" in failed["columns"]
