"""Issue 25 around an integration's TS tests (K7): what a hostile `tests/*.test.ts` can do.

A test may reach only its integration's folder and the SDK (N1), statically imported modules
included, which Deno loads without checking `--allow-read`; and its JUnit report is read with a
bound as Deno writes it, never stored (SEC5). Every test runs real `deno test`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_ekanos_testrun import integration as demo_integration

from workbench._tstests import run_ts_tests
from workbench.platforms.ekanos.loader import IMPORT_MAP, SDK
from workbench.runners.deno import testrun
from workbench.runners.deno.imports import refused_import
from workbench.runners.deno.pump import Bytes, pump
from workbench.runners.deno.testrun import TsTestCase

pytestmark = pytest.mark.deno
SECRET = "TOPSECRET-25"


def integration(tmp_path: Path, **tests: str) -> Path:
    """tmp/demo (an integration with tests/<name>.test.ts), beside tmp/other (another gem's code)
    and tmp/secret.txt, both holding SECRET."""
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "integration.ts").write_text(f"export const secret = {SECRET!r};\n")
    (tmp_path / "other" / "data.json").write_text(f'{{"secret": "{SECRET}"}}')
    return demo_integration(tmp_path, **tests)


def run(folder: Path, tmp_path: Path, timeout: float = 60) -> list[TsTestCase]:
    return run_ts_tests(folder, deno_dir=tmp_path / "deno", timeout=timeout)


# Each imports a file outside the folder in the graph Deno builds before running anything.
STATIC = {
    "text_absolute": ("{secret}", "import s from {secret!r} with {{ type: 'text' }};\nconsole.log(s);"),
    "other_gem": ("../../other/integration.ts", "import {{ secret }} from '../../other/integration.ts';"),
    "file_url": ("{secret_url}", "import s from {secret_url!r} with {{ type: 'text' }};\nconsole.log(s);"),
    "json": ("../../other/data.json", "import d from '../../other/data.json' with {{ type: 'json' }};"),
    "literal_dynamic": (
        "../../other/integration.ts",
        "const m = await import('../../other/integration.ts');\nconsole.log(m.secret);",
    ),
    "literal_dynamic_text": (
        "{secret}",
        "const m = await import({secret!r}, {{ with: {{ type: 'text' }} }});\nconsole.log(m.default);",
    ),
    "etc_passwd": ("/etc/passwd", "import p from '/etc/passwd' with {{ type: 'text' }};\nconsole.log(p);"),
}


@pytest.mark.parametrize("variant", sorted(STATIC))
def test_N1_a_ts_test_statically_importing_outside_its_folder_is_refused_unrun(tmp_path: Path, variant: str):
    secret = tmp_path / "secret.txt"
    names = {"secret": str(secret), "secret_url": secret.as_uri()}
    specifier, body = (part.format(**names) for part in STATIC[variant])
    folder = integration(
        tmp_path,
        leak=f"import {{ it }} from 'vitest';\n{body}\nit('runs', () => {{ console.log('RAN'); }});\n",
    )
    cases = run(folder, tmp_path)
    assert [(c.name, c.outcome) for c in cases] == [("(imports)", "failed")], cases
    message = cases[0].message
    assert message.startswith("E_SANDBOX: leak.test.ts may not import ") and repr(specifier) in message
    assert SECRET not in message and "RAN" not in message and "root:" not in message


def test_N1_an_import_through_the_integration_module_is_refused_too(tmp_path: Path):
    """The graph is checked whole: integration.ts importing another gem's code stops its tests."""
    folder = integration(
        tmp_path, ok="import integration from '../integration.ts';\nDeno.test('x', () => {});\n"
    )
    src = (folder / "integration.ts").read_text()
    (folder / "integration.ts").write_text("import { secret } from '../other/integration.ts';\n" + src)
    cases = run(folder, tmp_path)
    assert [(c.name, c.outcome) for c in cases] == [("(imports)", "failed")]
    assert (
        "'../other/integration.ts'" in cases[0].message and str(folder / "integration.ts") in cases[0].message
    )


def test_N1_a_symlink_in_the_graph_is_judged_by_where_it_leads(tmp_path: Path):
    """Links out of the folder already stop the run (GemLinks); the graph check resolves them
    on its own as well, so a link made after that check still cannot lead out."""
    folder = integration(tmp_path, link="import { secret } from './peek.ts';\nDeno.test('x', () => {});\n")
    (folder / "tests" / "peek.ts").symlink_to(tmp_path / "other" / "integration.ts")
    file = folder / "tests" / "link.test.ts"
    refused = refused_import(
        file, [folder, SDK], import_map=IMPORT_MAP, deno_dir=tmp_path / "deno", deadline=None
    )
    assert refused is not None and refused.code == "E_SANDBOX"
    assert refused.details["target"] == str((tmp_path / "other" / "integration.ts").resolve())
    inside = folder / "tests" / "helper.ts"
    inside.write_text("export const x = 1;\n")
    (folder / "tests" / "peek.ts").unlink()
    (folder / "tests" / "peek.ts").symlink_to(inside)
    assert (
        refused_import(file, [folder, SDK], import_map=IMPORT_MAP, deno_dir=tmp_path / "deno", deadline=None)
        is None
    )


def test_N1_a_hard_link_in_tests_stops_the_run(tmp_path: Path):
    """A hard link made locally in tests/ to a file outside (round 4) read it: Deno checks the
    path. The folder check refuses it before any file runs."""
    folder = integration(
        tmp_path,
        peek="Deno.test('peek', () => { throw new Error(Deno.readTextFileSync(new URL('./key.txt', import.meta.url))); });\n",
    )
    os.link(tmp_path / "secret.txt", folder / "tests" / "key.txt")
    cases = run(folder, tmp_path)
    assert [(c.name, c.outcome) for c in cases] == [("(links)", "failed")]
    assert "hard link" in cases[0].message and "tests/key.txt" in cases[0].message
    assert SECRET not in cases[0].message
    (folder / "tests" / "key.txt").unlink()
    (folder / "tests" / "key.txt").write_text("copy")
    cases = run(folder, tmp_path)
    assert [(c.name, c.outcome) for c in cases] == [("peek", "failed")] and "copy" in cases[0].message


def test_N1_what_a_ts_test_loads_at_run_time_is_held_to_its_folder(tmp_path: Path):
    """A computed import(), a Worker, a file: fetch and Deno.readTextFile are Deno's to check:
    --allow-read names only the folder and the SDK. Each probe passes when it was refused."""
    secret = tmp_path / "secret.txt"
    probes = f"""
    import {{ it, expect }} from 'vitest';
    const far = (p: string) => {str(tmp_path)!r} + p;
    it('computed import', async () => {{ await expect(import(far('/other/integration.ts'))).rejects.toThrow('read access'); }});
    it('computed text import', async () => {{
      await expect(import(far('/secret.txt'), {{ with: {{ type: 'text' }} }})).rejects.toThrow('read access');
    }});
    it('template import', async () => {{
      const name = 'integration';
      await expect(import(`../../other/${{name}}.ts`)).rejects.toThrow('read access');
    }});
    it('worker', async () => {{
      const w = new Worker(new URL({secret.parent.joinpath("other", "integration.ts").as_uri()!r}), {{ type: 'module' }});
      const err = await new Promise<ErrorEvent>((done) => {{ w.onerror = (e) => {{ e.preventDefault(); done(e); }}; }});
      w.terminate();
      expect(err.message).toContain('read access');
    }});
    it('worker importing out', async () => {{
      const w = new Worker(new URL('./reach.ts', import.meta.url), {{ type: 'module' }});
      const err = await new Promise<ErrorEvent>((done) => {{ w.onerror = (e) => {{ e.preventDefault(); done(e); }}; }});
      w.terminate();
      expect(err.message).toContain('read access');
    }});
    it('file fetch', async () => {{ await expect(fetch({secret.as_uri()!r})).rejects.toThrow(); }});
    it('readTextFile', async () => {{ await expect(Deno.readTextFile({str(secret)!r})).rejects.toThrow('read access'); }});
    """
    folder = integration(tmp_path, probes=probes)
    # a Worker's own graph is loaded at run time, so its static imports are checked by Deno
    (folder / "tests" / "reach.ts").write_text(f"import s from {str(secret)!r} with {{ type: 'text' }};\n")
    cases = {c.name: c for c in run(folder, tmp_path)}
    assert {n: (c.outcome, c.message) for n, c in cases.items()} == {
        n: ("passed", "")
        for n in (
            "computed import",
            "computed text import",
            "template import",
            "worker",
            "worker importing out",
            "file fetch",
            "readTextFile",
        )
    }


class SpyPopen(subprocess.Popen[bytes]):
    """Records, once each `deno test` has ended, how large a regular file its --junit-path was."""

    report_sizes: list[int | str] = []

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        args: Any = self.args
        junit = next((a.split("=", 1)[1] for a in args if str(a).startswith("--junit-path=")), None)
        if junit is not None:
            path = Path(junit)
            self.report_sizes.append(
                "fifo" if path.is_fifo() else path.stat().st_size if path.exists() else "none"
            )
        return code


def test_SEC5_a_junit_report_over_its_limit_stops_the_run_and_is_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """8 test names of 1 MiB make an 8 MiB report past a 1 MiB limit: the run stops with a
    coded error naming the limit, and the report was a FIFO, holding nothing on disk."""
    monkeypatch.setattr(testrun, "JUNIT_LIMIT", 1 << 20)
    monkeypatch.setattr(subprocess, "Popen", SpyPopen)
    SpyPopen.report_sizes = []
    names = (
        "import { it } from 'vitest';\nfor (let i = 0; i < 8; i++) it(String(i).repeat(1 << 20), () => {});\n"
    )
    cases = run(integration(tmp_path, names=names), tmp_path)
    assert [(c.name, c.outcome) for c in cases] == [("(report)", "failed")]
    assert cases[0].message.startswith(
        "E_TOO_LARGE: the JUnit report of names.test.ts is over 1,048,576 bytes"
    )
    assert SpyPopen.report_sizes and all(s in ("fifo", "none") for s in SpyPopen.report_sizes), (
        SpyPopen.report_sizes
    )


def test_SEC5_a_run_that_never_opens_its_report_fifo_is_not_waited_for(tmp_path: Path):
    """A child that exits without opening the FIFO (as Deno killed or crashing before its
    report): pump answers "done" at its exit, not "timeout" after waiting for a writer."""
    fifo_path = tmp_path / "report"
    os.mkfifo(fifo_path)
    fifo = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    proc = subprocess.Popen(
        [sys.executable, "-c", "print('bye')"], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    out, report = Bytes(1 << 10), Bytes(1 << 10)
    try:
        status = pump(
            proc, proc.stdout.fileno(), {proc.stdout.fileno(): out, fifo: report}, time.monotonic() + 60
        )
    finally:
        os.close(fifo)
        proc.stdout.close()
    assert (status, bytes(out.data).strip(), bytes(report.data), proc.returncode) == ("done", b"bye", b"", 0)


def test_SEC5_a_report_within_the_limit_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Names of 200 KiB in all, under a 1 MiB limit: every case comes back, names intact."""
    monkeypatch.setattr(testrun, "JUNIT_LIMIT", 1 << 20)
    names = (
        "import { it } from 'vitest';\nfor (let i = 0; i < 4; i++) it(String(i).repeat(50_000), () => {});\n"
    )
    cases = run(integration(tmp_path, names=names), tmp_path)
    assert sorted((c.name, c.outcome) for c in cases) == [(str(i) * 50_000, "passed") for i in range(4)]
