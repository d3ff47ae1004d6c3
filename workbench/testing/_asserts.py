"""pytest's assertion rewriting applied to notebook cells: `assert total == 7` fails with
`assert 6 == 7` and the values of its sub-expressions, as in a test module.

An IPython AST transformer (`shell.ast_transformers`) runs pytest's `rewrite_asserts` on each
cell that has an `assert` (after IPython turned its magics into Python): a cell without one
runs exactly as written. Comparisons get pytest's detail (a dict's differing items, a list's
diff) as with `pytest -v`. The kernel of every notebook test has it on (`_kernel` sets ENV);
in the Gem Workbench kernel it is off unless ENV is set or `%assert_rewrite on` turns it on.
Imports pytest only when it is turned on (kernel start stays light).
"""

from __future__ import annotations

import ast
import copy
import os
import re
from typing import Any

#: The environment variable that turns rewriting on from the kernel's start ("1").
ENV = "GEM_WORKBENCH_ASSERT_REWRITE"
#: Lines of a comparison's detail kept in a failure's message.
MAX_DETAIL_LINES = 100

#: The names rewritten asserts bind at a cell's top level: pytest's two imports (kept: a function
#: the cell defines looks them up when called) and its temporaries (dropped after each cell).
_IMPORTS = ("@py_builtins", "@pytest_ar")
_TEMPORARY = re.compile(r"@py_(assert|format)\d+\Z")


class AssertRewriter(ast.NodeTransformer):
    """Rewrites the asserts of a cell as pytest rewrites those of a test module (the cells of
    `shell`, whose %who is not to list pytest's temporaries while the cell runs)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def visit(self, node: ast.AST) -> ast.AST:
        if not isinstance(node, ast.Module) or not any(isinstance(n, ast.Assert) for n in ast.walk(node)):
            return node
        from _pytest.assertion.rewrite import rewrite_asserts

        rewritten = copy.deepcopy(node)
        try:
            # (the source only serves the assertion-pass hook, which no kernel has)
            rewrite_asserts(rewritten, b"", module_path=None, config=None)
        except Exception:  # noqa: BLE001 - a rewriting pytest cannot do leaves the cell as written
            return node
        temporaries = {
            n.id for n in ast.walk(rewritten) if isinstance(n, ast.Name) and _TEMPORARY.match(n.id)
        }
        self.shell.user_ns_hidden.update(dict.fromkeys(temporaries))  # (each is None once its assert passed)
        return rewritten


def enabled(shell: Any) -> bool:
    """Whether the cells of `shell` are rewritten."""
    return any(isinstance(t, AssertRewriter) for t in shell.ast_transformers)


def install(shell: Any) -> None:
    """Rewrite the asserts of every cell `shell` runs from now on (once, however often called)."""
    import _pytest.assertion.rewrite as pytest_ar

    if enabled(shell):
        return
    shell.ast_transformers.append(AssertRewriter(shell))
    shell.events.register("post_run_cell", _drop_temporaries)
    # pytest's imports, hidden from %who as the kernel's own names are
    hidden = {"@py_builtins": __import__("builtins"), "@pytest_ar": pytest_ar}
    shell.user_ns.update(hidden)
    shell.user_ns_hidden.update(hidden)
    _swap_reprcompare(None, _explain_comparison)  # (a pytest session in this process sets its own)


def uninstall(shell: Any) -> None:
    """Run cells as written again."""
    shell.ast_transformers[:] = [t for t in shell.ast_transformers if not isinstance(t, AssertRewriter)]
    try:
        shell.events.unregister("post_run_cell", _drop_temporaries)
    except ValueError:  # (was not registered)
        pass
    _swap_reprcompare(_explain_comparison, None)


def _swap_reprcompare(old: Any, new: Any) -> None:
    """Make `new` the comparison detail of rewritten asserts, if `old` is the one set now."""
    from _pytest.assertion import util

    # pytest has no public setter: its rewritten asserts ask this slot of util, which pytest's own
    # assertion plugin fills for each test (pytest_runtest_protocol) and restores after it; a
    # kernel has no pytest session, so it is filled the same way
    if util._reprcompare is old:  # noqa: SLF001
        util._reprcompare = new  # noqa: SLF001


def setup(shell: Any) -> None:
    """Register `%assert_rewrite`; turn rewriting on if ENV says so (what the kernel calls)."""
    shell.register_magic_function(_assert_rewrite_magic, "line", "assert_rewrite")
    if os.environ.get(ENV, "").strip().lower() in ("1", "on", "true", "yes"):
        install(shell)


def _assert_rewrite_magic(line: str) -> None:
    """%assert_rewrite [on|off]: pytest's assertion rewriting of this kernel's cells.

    On, a failing `assert total == 7` says `assert 6 == 7` and where each value came from, as
    in pytest; off (the default, but in notebook tests), asserts run as Python runs them.
    Without an argument: whether it is on. GEM_WORKBENCH_ASSERT_REWRITE=1 turns it on at start.
    """
    from IPython import get_ipython

    shell = get_ipython()
    word = line.strip().lower()
    if word == "on":
        install(shell)
    elif word == "off":
        uninstall(shell)
    elif word:
        print(f"%assert_rewrite: give on or off, not {line.strip()!r}")
        return
    print(f"assertion rewriting is {'on' if enabled(shell) else 'off'}")


def _drop_temporaries(result: Any = None) -> None:
    """After a cell: drop the values its top-level asserts kept (a failing one keeps them)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    for name in [n for n in shell.user_ns if n.startswith("@py_") and _TEMPORARY.match(n)]:
        del shell.user_ns[name]


class _Config:
    """What pytest's comparison explanations ask of a config, outside a test session: `-v`."""

    VERBOSITY_ASSERTIONS = "assertions"
    _INI = {
        "truncation_limit_lines": "0",
        "truncation_limit_chars": "0",
        "assertion_text_diff_style": "ndiff",
    }

    def __init__(self) -> None:
        self.pluginmanager = self

    def has_plugin(self, name: str) -> bool:
        return False  # (no terminal writer: no colours)

    def get_verbosity(self, verbosity_type: str | None = None) -> int:
        return 1

    def getoption(self, name: str, default: Any = None, skip: bool = False) -> Any:
        return 1 if name == "verbose" else default

    def getini(self, name: str) -> Any:
        return self._INI.get(name)


def _explain_comparison(op: str, left: object, right: object) -> str | None:
    """pytest's detail of a failing comparison (its `pytest_assertrepr_compare`), in the form
    its rewritten asserts take (as pytest's own `callbinrepr` gives it); None: none."""
    try:
        from _pytest.assertion import pytest_assertrepr_compare

        lines = pytest_assertrepr_compare(config=_Config(), op=op, left=left, right=right)  # type: ignore[arg-type]  # the part of a Config it uses
    except Exception:  # noqa: BLE001 - another pytest: the plain `6 == 7`
        return None
    if not lines:
        return None
    # (a notebook's report has no -vv to offer)
    lines = [line.replace(", use -vv to show", "") for line in lines]
    if len(lines) > MAX_DETAIL_LINES:
        left_out = len(lines) - MAX_DETAIL_LINES
        lines = [*lines[:MAX_DETAIL_LINES], f"[… {left_out} more lines of the comparison not shown]"]
    return "\n~".join(line.replace("\n", "\\n") for line in lines).replace("%", "%%")
