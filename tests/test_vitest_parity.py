"""The vitest parity corpus (tests/vitest_parity): test files written against vitest's documented
API, each case titled with its intended outcome, run under the workbench's `deno test` and under
real vitest (installed with npm into a session folder when `node` is on the machine); both must
give every case its intended outcome, case by case."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench._tstests import run_ts_tests
from workbench.platforms.ekanos.loader import SDK

pytestmark = pytest.mark.deno
CORPUS = Path(__file__).resolve().parent / "vitest_parity"
#: The vitest the corpus was written against (pinned so a new release cannot move the baseline).
VITEST = "vitest@4.1.12"
INTENDED = {"pass": "passed", "fail": "failed", "skip": "ignored"}


def intended(name: str) -> str:
    """A case's intended outcome, from the `pass:` / `fail:` / `skip:` that starts its title."""
    title = name.split("::", 1)[-1].rsplit(" > ", 1)[-1]
    return INTENDED.get(title.split(":", 1)[0], "(no intended outcome in the title)")


@pytest.fixture(scope="session")
def deno_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    cases = run_ts_tests(CORPUS, deno_dir=tmp_path_factory.mktemp("parity") / "deno", timeout=120)
    return {f"{c.file.name}::{c.name}": c.outcome for c in cases}


@pytest.fixture(scope="session")
def real_vitest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with real vitest installed and a copy of the corpus (vite resolves `vitest` from
    the test file's folder up, so the files must sit beside node_modules)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm are not on this machine: real vitest cannot run")
    root = tmp_path_factory.mktemp("vitest")
    (root / "package.json").write_text('{"type": "module", "private": true}')
    npm = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", VITEST],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if npm.returncode != 0:
        pytest.fail(f"npm install {VITEST} failed:\n{npm.stdout}\n{npm.stderr}")
    shutil.copytree(CORPUS, root / "corpus")
    aliases = {"@ekanos/sdk/testing": str(SDK / "testing.ts"), "@ekanos/sdk": str(SDK / "index.ts")}
    config = {
        "resolve": {"alias": aliases},
        "test": {
            "include": ["corpus/tests/**/*.test.ts"],
            "reporters": ["json"],
            "outputFile": "vitest.json",
        },
    }
    (root / "vitest.config.mjs").write_text(f"export default {json.dumps(config)};\n")
    yield root


def vitest_outcomes(root: Path) -> dict[str, str]:
    subprocess.run(
        [str(root / "node_modules" / ".bin" / "vitest"), "run", "--config", "vitest.config.mjs"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )  # it exits 1: the corpus has failing cases by design
    report = json.loads((root / "vitest.json").read_text())
    status = {
        "passed": "passed",
        "failed": "failed",
        "skipped": "ignored",
        "pending": "ignored",
        "todo": "ignored",
    }
    out: dict[str, str] = {}
    for f in report["testResults"]:
        assert not f.get("message"), f"{f['name']}: {f['message']}"  # a load error
        for a in f["assertionResults"]:
            name = " > ".join([*a["ancestorTitles"], a["title"]])
            out[f"{Path(f['name']).name}::{name}"] = status[a["status"]]
    return out


def test_K7_parity_corpus_every_case_as_intended_under_deno(deno_outcomes: dict[str, str]):
    assert len(deno_outcomes) >= 80
    wrong = {n: o for n, o in deno_outcomes.items() if "::(" in n or o != intended(n)}
    assert wrong == {}


def test_K7_parity_corpus_real_vitest_agrees_case_by_case(real_vitest: Path, deno_outcomes: dict[str, str]):
    real = vitest_outcomes(real_vitest)
    assert {n: intended(n) for n in real} == real  # the corpus means what vitest does
    assert deno_outcomes == real  # same names (`.each` titles included), same outcomes
