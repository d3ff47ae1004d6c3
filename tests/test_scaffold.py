"""`gem-workbench new`: every platform/language pair gives a gem that `check` passes and whose
first call succeeds; its test and notebook pass; bad names and occupied folders are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench.cli import main
from workbench.scaffold._create import first_call

PAIRS = [
    ("notochord", "py"),
    ("notochord", "js"),
    ("notochord", "ts"),
    ("agent", "py"),
    ("agent", "js"),
    ("agent", "ts"),
    ("ekanos", "ts"),
    ("ekanos", "js"),
]
EXPECTED = {
    "notochord": lambda v, title: (
        v
        == {
            "greeting": "Hello, Ada!",
            "count": 1,
            "note": f"Welcome to {title}: this file is fixtures/workspace/welcome.txt.",
        }
    ),
    "agent": lambda v, title: v == {"agent": title, "sum": 5},
    "ekanos": lambda v, title: v == {"greeting": "Hello, Ada!", "count": 1},
}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))


def _marks(lang: str) -> list[pytest.MarkDecorator]:
    return [] if lang == "py" else [pytest.mark.deno]


@pytest.mark.parametrize(
    ("platform", "lang"), [pytest.param(p, lang, marks=_marks(lang), id=f"{p}-{lang}") for p, lang in PAIRS]
)
def test_new_gem_checks_and_its_first_call_succeeds(platform, lang, tmp_path, capsys):
    name = f"my-{platform}-{lang}"
    assert main(["new", name, "--platform", platform, "--lang", lang, "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    gem = tmp_path / name
    assert f"Created {gem} ({platform}). Next:" in out and f"gem-workbench check {gem}" in out
    assert (gem / f"{name}.ipynb").is_file() and (gem / ".gem-workbench" / f"{platform}.d.ts").is_file()
    assert main(["check", str(gem)]) == 0, capsys.readouterr().err
    data, _ = first_call(platform)
    with workbench.open(gem) as bench:
        res = bench.call("hello", data)
    assert res.ok, res.error
    title = " ".join(p.capitalize() for p in name.split("-"))
    assert EXPECTED[platform](res.value, title), res.value
    nb = json.loads((gem / f"{name}.ipynb").read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "gem-workbench"
    assert any('workbench.open(".")' in "".join(c["source"]) for c in nb["cells"])


def test_manifest_says_its_schema_and_the_loader_accepts_it(tmp_path):
    """The manifest's `$schema` points at the editor copy in .gem-workbench/, a valid 2020-12
    schema in ECMAScript syntax that accepts the manifest; `check` accepts the key."""
    import jsonschema

    for platform in ("notochord", "agent"):
        gem = tmp_path / platform
        assert main(["new", platform, "--platform", platform, "--lang", "py", "--dir", str(tmp_path)]) == 0
        manifest = json.loads((gem / "manifest.json").read_text())
        assert manifest["$schema"] == "./.gem-workbench/manifest.schema.json"
        schema = json.loads((gem / manifest["$schema"]).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "\\Z" not in json.dumps(schema)  # `\Z` means a literal Z to an editor's RegExp
        assert schema["$id"] == f"urn:gem-workbench:schema:{platform}:manifest"
        jsonschema.Draft202012Validator(schema).validate(manifest)
        assert main(["check", str(gem)]) == 0


def test_scaffolded_python_tests_pass(tmp_path):
    """The pytest file of a notochord and an agent gem, run as their author would."""
    for platform in ("notochord", "agent"):
        assert (
            main(["new", f"t-{platform}", "--platform", platform, "--lang", "py", "--dir", str(tmp_path)])
            == 0
        )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


@pytest.mark.deno
def test_scaffolded_ekanos_test_and_notebooks_pass(tmp_path):
    """K7: tests/hello.test.ts (createMockContext + vitest) and the notebooks, via gem-workbench test."""
    for platform, lang in (("ekanos", "ts"), ("notochord", "ts"), ("agent", "js")):
        assert (
            main(["new", f"nb-{platform}", "--platform", platform, "--lang", lang, "--dir", str(tmp_path)])
            == 0
        )
    gems = [str(tmp_path / f"nb-{p}") for p in ("ekanos", "notochord", "agent")]
    proc = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "test", *gems, "--", "-q", "-p", "no:randomly"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 passed" in proc.stdout  # three notebooks, the TS test, the two gems' pytest files


def test_python_tools_type_check_with_the_generated_protocols(tmp_path, mypy_cache):
    from mypy import api

    for platform in ("notochord", "agent"):
        assert (
            main(["new", f"py-{platform}", "--platform", platform, "--lang", "py", "--dir", str(tmp_path)])
            == 0
        )
        tool = tmp_path / f"py-{platform}" / "tools" / "hello.py"
        out, err, status = api.run([str(tool), "--strict", mypy_cache("strict")])
        assert status == 0, out + err


@pytest.mark.parametrize(
    "name", ["Bad", "1gem", "my_gem", "../x", "a/b", "", "gem-", "x" * 64, "my gem", "é"]
)
def test_bad_names_are_refused(name, tmp_path, capsys):
    assert main(["new", name, "--dir", str(tmp_path)]) == 2
    assert "is not a slug: start with a lowercase letter" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_python_is_not_an_ekanos_language(tmp_path, capsys):
    assert main(["new", "ek", "--platform", "ekanos", "--lang", "py", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Ekanos integrations are TypeScript or JavaScript" in err and "--lang ts or --lang js" in err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep")
    assert main(["new", "taken", "--dir", str(tmp_path)]) == 2
    assert "is a folder that is not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["mine.txt"]
    (tmp_path / "afile").write_text("x")
    assert main(["new", "afile", "--dir", str(tmp_path)]) == 2
    assert "is a file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()  # an empty folder is fine (e.g. a fresh clone's)
    assert main(["new", "empty", "--lang", "py", "--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp left


def test_bad_tool_name_is_refused(tmp_path, capsys):
    assert main(["new", "g", "--tool", "Say-Hi", "--dir", str(tmp_path)]) == 2
    assert "a tool name is lowercase snake_case" in capsys.readouterr().err


def test_templates_ship_in_the_package():
    """hatchling's wheel takes every file under workbench/ that git does not ignore."""
    from workbench.scaffold._create import TEMPLATES

    # each platform's templates are in its package (workbench/platforms/<name>/templates)
    platforms = Path(workbench.__file__).parent / "platforms"
    folders = [TEMPLATES, *(platforms / p / "templates" for p in ("notochord", "agent", "ekanos"))]
    names = {
        p.relative_to(f if f == TEMPLATES else platforms).as_posix()
        for f in folders
        for p in f.rglob("*.tmpl")
    }
    assert {"notochord/templates/tool.ts.tmpl", "agent/templates/tool.py.tmpl"} <= names
    assert {"ekanos/templates/integration.ts.tmpl", "common/test_tool.py.tmpl"} <= names
    ignored = subprocess.run(
        ["git", "check-ignore", *(str(p) for f in folders for p in f.rglob("*"))],
        capture_output=True,
        text=True,
    ).stdout
    assert ignored == ""
    assert Path(workbench.__file__).parent.joinpath("types", "notochord.d.ts").is_file()
