"""The Face gets its notebook views by name from `workbench.jupyter.present` (layering seam)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import workbench
from workbench._present import BACKEND, presenter
from workbench.jupyter.present import PRESENTERS

PACKAGE = Path(workbench.__file__).parent


def face_asks() -> set[str]:
    """Every name passed to `presenter("…")` outside the presentation package itself."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if "jupyter" not in path.relative_to(PACKAGE).parts:
            names |= set(re.findall(r"""presenter\(\s*["']([^"']+)["']""", path.read_text()))
    return names


def test_every_presenter_the_face_asks_for_is_in_the_table():
    asked = face_asks()
    # the scan must see the Face's calls, or this test would pass vacuously
    assert {"bench_html", "result_html", "result_text", "form", "replay"} <= asked
    assert asked - set(PRESENTERS) == set()
    assert all(callable(f) for f in PRESENTERS.values())


def test_an_unknown_presenter_is_a_lookup_error_naming_the_table():
    with pytest.raises(
        LookupError,
        match=rf"{re.escape(BACKEND)} has no presenter 'nope' "
        r"\(it has: .*bench_html",
    ):
        presenter("nope")


def test_the_face_does_not_import_the_jupyter_package():
    for name in ("bench/bench.py", "bench/result.py", "bench/mail.py"):
        source = (PACKAGE / name).read_text()
        assert not re.search(r"^\s*(from|import)\s+(\.|workbench\.)jupyter", source, re.M), name


def test_bench_and_result_display_through_the_presenters(opened):
    from conftest import EXAMPLE_GEM

    bench = opened(EXAMPLE_GEM)
    html = bench._repr_html_()
    assert html == PRESENTERS["bench_html"](bench) and "acme.notes" in html
    res = bench.call("add_note", {"title": "hi"})
    assert res._repr_html_() == PRESENTERS["result_html"](res)


def test_the_backend_module_is_light():
    import subprocess
    import sys

    code = (
        "import sys, workbench.jupyter.present; heavy = [m for m in ('pandas', 'ipywidgets', "
        "'IPython', 'jsonschema') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
