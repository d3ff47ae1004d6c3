"""The public surface is pinned, and `import workbench` stays light."""

from __future__ import annotations

import subprocess
import sys

import workbench


def test_all_is_exactly_the_public_surface():
    assert workbench.__all__ == sorted(workbench.__all__)
    assert set(workbench.__all__) == {
        "CODES",
        "Bench",
        "CallHooks",
        "CallIdentity",
        "CallResult",
        "GemLoadError",
        "Limits",
        "UsageError",
        "WorkbenchError",
        "__version__",
        "load_ipython_extension",
        "open",
    }
    # isidentifier(): pytest rewrites asserts in a package that ships a pytest plugin (ours:
    # workbench.testing.plugin) and leaves '@py_builtins' / '@pytest_ar' in its namespace.
    public = {n for n in dir(workbench) if n.isidentifier() and not n.startswith("_")} - {
        "bench",
        "bundles",
        "conversations",
        "ctx",
        "debug",
        "doctor",
        "gem",
        "pins",
        "providers",
        "runners",
        "inspect",
        "mcp",
        "cli",
        "jupyter",
        "testing",
        "kernel",
        "platforms",
        "plugin",
        "scaffold",
        "types",
    }  # subpackages, loaded on use
    assert public <= set(workbench.__all__)


def test_error_root_carries_codes():
    for cls in (workbench.GemLoadError, workbench.UsageError):
        assert issubclass(cls, workbench.WorkbenchError)
    assert workbench.GemLoadError("x").code == "E_MANIFEST"
    assert workbench.UsageError("x").code == "E_USAGE"
    assert {"E_SCHEMA", "E_PERM_DENIED", "E_TOO_LARGE"} <= set(workbench.CODES)


def test_open_options_are_keyword_only(tmp_path):
    import inspect

    params = inspect.signature(workbench.open).parameters
    assert [n for n, p in params.items() if p.kind is not p.KEYWORD_ONLY] == ["path"]


def test_import_workbench_is_light():
    code = (
        "import sys, workbench; heavy = [m for m in ('pandas', 'jsonschema', 'ipywidgets', "
        "'IPython', 'nbclient') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_providers_option_is_a_usage_error(tmp_path):
    import pytest
    from conftest import EXAMPLE_GEM

    with pytest.raises(workbench.UsageError, match="providers="):
        workbench.open(EXAMPLE_GEM, providers="fake")
    with pytest.raises(workbench.UsageError, match="providers="):
        workbench.open(EXAMPLE_GEM, providers={"files": "real", "email": "mock"})
