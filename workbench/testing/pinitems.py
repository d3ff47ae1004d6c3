"""Pinned calls as pytest items: `<gem>/tests/calls/<tool>/<name>.json`, one item per case.

Collected by the notebooks' rule (`--nb`, a path named on the command line, ini `nb_paths`);
each replays its case on a mock bench of its gem (pins/replay.py) and fails with the lines of
what differs. One `Replayer` per session (per xdist worker) keeps a warm bench per gem, so a
gem's cases share its started sandbox. `--update-pins` writes a case that replays otherwise
again from its replay, and is the one way a run writes into tests/calls/: a pin made during
the run (a notebook's `%tool … --pin`, a `bench` fixture's `res.pin`) goes to the item's own
folder under pytest's basetemp and is listed at the end."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

_REPLAYER = pytest.StashKey[Any]()
_PINS = pytest.StashKey[Path]()
#: The environment variable a run sets for what it runs (_pins.RUN_PINS: not imported here, so
#: that collecting a pytest run loads no more of the workbench than it needs).
RUN_PINS = "GEM_WORKBENCH_RUN_PINS"
RUN_TREE = "GEM_WORKBENCH_RUN_TREE"


def is_case_file(path: Path) -> bool:
    """Whether `path` is where a case lives: <gem>/tests/calls/<tool>/<name>.json, or a doctor's
    finding at <gem>/tests/calls/doctor/<tool>/<kind>.json."""
    # (the same rule as pins.replay.calls_folder_of, without importing the ctx layer into every
    # pytest run's collection: tests/test_pins.py checks the two agree)
    parts = path.parts
    if path.suffix != ".json" or len(parts) < 5:
        return False
    return parts[-4:-2] == ("tests", "calls") or (
        len(parts) >= 6 and parts[-5:-3] == ("tests", "calls") and parts[-3] == "doctor"
    )


def close_replayer(config: pytest.Config) -> None:
    """Close the session's warm benches (pytest_sessionfinish)."""
    replayer = config.stash.get(_REPLAYER, None)
    if replayer is not None:
        del config.stash[_REPLAYER]
        replayer.close()


class PinFile(pytest.File):
    """A case file: one item."""

    def collect(self) -> Any:
        yield PinItem.from_parent(self, name=f"{self.path.parent.name}/{self.path.stem}")


class PinFailure(Exception):
    """A pinned call replayed otherwise (or its case could not be read)."""


class PinItem(pytest.Item):
    """Replays one pinned call and compares its result, changes and effects."""

    def runtest(self) -> None:
        from .._errors import WorkbenchError
        from ..pins.replay import Replayer

        config = self.config
        replayer = config.stash.get(_REPLAYER, None)
        if replayer is None:
            replayer = config.stash[_REPLAYER] = Replayer()
        update = bool(config.getoption("update_pins", False))
        try:
            out = replayer.replay(self.path, update=update)
        except WorkbenchError as exc:
            raise PinFailure(f"{exc.code}: {exc.message}") from None
        if out.updated:
            self.user_properties.append(("updated", str(self.path)))
            return
        if not out.ok:
            raise PinFailure(out.report())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, PinFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"pinned call {self.name}"


def report_updated(terminalreporter: Any) -> None:
    """After `--update-pins`: the cases written again, one line each (workers' too, as their
    reports carry the item's user properties)."""
    updated = sorted(
        {
            str(value)
            for report in terminalreporter.stats.get("passed", [])
            for key, value in getattr(report, "user_properties", ())
            if key == "updated"
        }
    )
    if not updated:
        return
    terminalreporter.write_sep("=", f"{len(updated)} pinned call{'' if len(updated) == 1 else 's'} updated")
    for path in updated:
        terminalreporter.write_line(f"updated {path}")


def run_pins_folder(item: pytest.Item) -> Path:
    """The folder pins made while `item` runs go to (one per item, made once): under pytest's
    basetemp, which keeps the last runs' folders and removes older ones."""
    folder = item.stash.get(_PINS, None)
    if folder is None:
        factory = getattr(item.config, "_tmp_path_factory", None)  # (None with -p no:tmpdir)
        if factory is not None:
            folder = factory.mktemp(f"pins-{item.path.stem[:40]}", numbered=True)
        else:
            import tempfile

            folder = Path(tempfile.mkdtemp(prefix="gem-workbench-pins-"))
        item.stash[_PINS] = folder
    return folder


def run_env(item: pytest.Item) -> dict[str, str]:
    """The environment that sends pins made while `item` runs to its run folder: RUN_PINS, and
    RUN_TREE, the folders under test (the rootdir, where pytest started and the paths it was
    given): a gem elsewhere (a notebook's scratch copy) keeps its own pins."""
    config = item.config
    tree = [config.rootpath, config.invocation_params.dir]
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if path.exists():
            tree.append(path if path.is_dir() else path.parent)
    folders = dict.fromkeys(str(p.resolve()) for p in tree)
    return {RUN_PINS: str(run_pins_folder(item)), RUN_TREE: os.pathsep.join(folders)}


def note_pins(item: pytest.Item, folder: Path) -> None:
    """Add the cases pinned under `folder` to `item`'s user properties (report_pinned lists
    them, xdist's workers' included)."""
    for path in sorted(folder.rglob("*.json")):
        if ("pinned", str(path)) not in item.user_properties:
            item.user_properties.append(("pinned", str(path)))


def report_pinned(terminalreporter: Any) -> None:
    """The calls pinned during the run, one line each: where they went instead of tests/calls/."""
    pinned = sorted(
        {
            str(value)
            for reports in terminalreporter.stats.values()
            for report in reports
            for key, value in getattr(report, "user_properties", ())
            if key == "pinned"
        }
    )
    if not pinned:
        return
    n = len(pinned)
    terminalreporter.write_sep(
        "=", f"{n} call{'' if n == 1 else 's'} pinned during the run, kept out of the gem's tests/calls/"
    )
    for path in pinned:
        terminalreporter.write_line(
            f"pinned {path} (copy it into the gem to keep it; --update-pins rewrites cases from their replays)"
        )
