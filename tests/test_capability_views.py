"""A bench lists and answers its own platform's views only (issue #27): `dir()` (and so
completion) shows them, another platform's is an AttributeError naming the platform and the
capability that has it, and every View row of every capability spec is answered on a bench of
a platform that has it, so no row is a lie."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import workbench
from workbench._errors import WorkbenchError
from workbench.bench.views import GATED
from workbench.ctx import SPECS
from workbench.ctx.spec import views_for
from workbench.platforms import KNOWN, profile

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
FOLDERS = {"notochord": GEMS / "notes", "agent": GEMS / "agent-research", "ekanos": GEMS / "acme-payments"}

#: the arguments a view is called with here (none: called without)
ARGS: dict[str, tuple[Any, ...]] = {
    "data": ("notes",),
    "sql": ("SELECT 1 AS one",),
    "restore_file": ("workspace:nothing.md",),
    "read": ("workspace:nothing.md",),
    "allow_recipients": ("*@acme.example",),
    "inject_fault": ("web_search",),
}


def views(name: str) -> set[str]:
    return set(views_for(profile(name), SPECS.values()))


@pytest.fixture(params=sorted(KNOWN))
def platform(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def bench(platform: str, opened: Callable[..., workbench.Bench]) -> workbench.Bench:
    b = opened(FOLDERS[platform])
    assert b.profile.name == platform
    return b


def test_every_platform_has_a_bench_here() -> None:
    assert set(FOLDERS) == set(KNOWN)


def test_dir_lists_its_platforms_views_and_no_others(platform: str, bench: workbench.Bench) -> None:
    listed = set(dir(bench))
    mine = views(platform)
    assert mine <= listed
    assert not (GATED - mine) & listed, (GATED - mine) & listed
    for generic in ("tools", "calls", "snapshot", "diff", "restore", "call", "form", "reload", "close"):
        assert generic in listed


def test_a_foreign_view_is_an_attribute_error_naming_who_has_it(
    platform: str, bench: workbench.Bench
) -> None:
    foreign = GATED - views(platform)
    assert foreign  # each platform lacks some other's view
    for name in foreign:
        assert not hasattr(bench, name)
        with pytest.raises(AttributeError) as caught:
            getattr(bench, name)
        message = str(caught.value)
        having = [profile(p) for p in KNOWN if name in views(p)]
        assert having, name
        for other in having:
            assert other.title in message, message
            _, spec = views_for(other, SPECS.values())[name]
            assert f"({spec.title})" in message, message
        assert f"{bench.profile.title} do not have it" in message


def test_the_issues_examples_say_it_in_their_words(opened: Callable[..., workbench.Bench]) -> None:
    noto = opened(FOLDERS["notochord"])
    with pytest.raises(AttributeError, match=r"^outbox\(\) is a view of agent custom tools \(ctx\.tools\); "):
        noto.outbox()
    with pytest.raises(AttributeError, match="Notochord gems do not have it"):
        noto.allow_recipients("a@x.example")
    agent = opened(FOLDERS["agent"])
    with pytest.raises(AttributeError, match=r"mailbox\(\) is a view of Notochord gems \(ctx\.email\)"):
        agent.mailbox()
    with pytest.raises(AttributeError, match=r"^email is a view of Notochord gems"):
        agent.email.allow("all")
    with pytest.raises(AttributeError, match=r"account_storage\(\) is a view of Ekanos integrations"):
        agent.account_storage()


def test_every_view_row_is_answered_where_its_platform_has_it(platform: str, bench: workbench.Bench) -> None:
    for name, (row, _spec) in views_for(bench.profile, SPECS.values()).items():
        value = getattr(bench, name)  # not an AttributeError: the row is true
        if not callable(value):
            continue  # bench.email: an object with methods
        args = ARGS.get(name, ())
        if name in ("diff", "restore"):
            args = (bench.snapshot(),)
        try:
            value(*args)
        except WorkbenchError:
            pass  # its own answer about its arguments (e.g. no saved version), not a missing view
        assert row.doc, name
