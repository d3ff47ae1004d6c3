"""Pinned calls as pytest items: `<gem>/tests/calls/<tool>/<name>.json`, one item per case.

Collected by the notebooks' rule (`--nb`, a path named on the command line, ini `nb_paths`);
each replays its case on a mock bench of its gem (_pinreplay.py) and fails with the lines of
what differs. One `Replayer` per session (per xdist worker) keeps a warm bench per gem, so a
gem's cases share its started sandbox. `--update-pins` writes a case that replays otherwise
again from its replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_REPLAYER = pytest.StashKey[Any]()


def is_case_file(path: Path) -> bool:
    """Whether `path` is where a case lives: <gem>/tests/calls/<tool>/<name>.json, or a doctor's
    finding at <gem>/tests/calls/doctor/<tool>/<kind>.json."""
    # (the same rule as _pinreplay.calls_folder_of, without importing the ctx layer into every
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
        from .._pinreplay import Replayer

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
