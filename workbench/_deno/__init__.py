"""The Deno binary (PyPI `deno`), the flags every workbench run of it takes and the minimal
environment it gets: shared by the sandbox (runners/deno), `check` (which imports every JS/TS
tool without calling it) and the platforms that must run a module to load it (Ekanos): `probe`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# no prompt, no config file, no lock file, no npm:, no remote imports (N4)
DENO_FLAGS = ("--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote")


def deno_bin() -> str:
    from deno import find_deno_bin

    return str(find_deno_bin())


def minimal_env(deno_dir: Path) -> dict[str, str]:
    """A minimal environment: nothing of the user's leaks into the sandbox."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(deno_dir),
        "DENO_DIR": str(deno_dir),
        "NO_COLOR": "1",
        "DENO_NO_UPDATE_CHECK": "1",
    }


# -- probe: import modules without calling them ---------------------------------------------------

HERE = Path(__file__).resolve().parent
PROBE_SECONDS = 30.0  # importing the modules: their top-level code is the author's
MAX_PRINTED = 16 << 20  # what the modules may print while they are imported
MAX_ANSWER = (1 << 20) - 4096  # the answer, as JSON


class ProbeError(Exception):
    """The probe could not answer: `why` is "timeout", "printed", "too_large" or "crashed"."""

    def __init__(self, why: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.why, self.message, self.details = why, message, details


def probe(
    urls: list[str],
    *,
    read: list[Path],
    deno_dir: Path,
    import_map: Path | None = None,
    describe: bool = False,
) -> dict[str, Any]:
    """Import each module (file URLs) in a Deno Worker that may only read `read`, and answer
    `{modules: [{url, ok, exports | kind, name, message, stack, path, issues}]}` (probe_worker.ts),
    bounded: PROBE_SECONDS, MAX_PRINTED bytes printed, MAX_ANSWER characters of answer, a V8
    heap of 512 MB. `describe`: an Ekanos integration's description too (the SDK's)."""
    deno_dir.mkdir(parents=True, exist_ok=True)
    readable = [str(p) for p in read]
    config = {"urls": urls, "read": readable, "describe": describe, "max": MAX_ANSWER}
    cmd = [
        deno_bin(),
        "run",
        *DENO_FLAGS,
        "--quiet",
        "--unstable-worker-options",
        "--v8-flags=--max-old-space-size=512",
        *([f"--import-map={import_map}"] if import_map else []),
        f"--allow-read={','.join([*readable, str(HERE)])}",
        str(HERE / "probe.ts"),
        json.dumps(config),
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = _run(cmd, out, err, deno_dir)
        text, errors = _tail(out), _tail(err)
    at = text.rfind("\n\x1e")
    try:
        answer = json.loads(text[at + 2 :]) if at >= 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise ProbeError("crashed", f"Deno exited ({code}): {(errors.strip() or text.strip())[-2000:]}")
    if "tooLarge" in answer:
        raise ProbeError("too_large", f"the answer is {answer['tooLarge']} characters", limit=MAX_ANSWER)
    if "failed" in answer:
        raise ProbeError("crashed", str(answer["failed"].get("message", ""))[:2000])
    return answer


def _run(cmd: list[str], out: Any, err: Any, deno_dir: Path) -> int:
    """Run the probe within PROBE_SECONDS and MAX_PRINTED bytes of output; its exit code."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        env=minimal_env(deno_dir),
        start_new_session=True,
    )
    deadline = time.monotonic() + PROBE_SECONDS
    try:
        while True:
            try:
                code: int | None = proc.wait(timeout=0.01)
            except subprocess.TimeoutExpired:
                code = None
            # (also once it has exited: on a busy machine it may print it all between two looks)
            if os.fstat(out.fileno()).st_size + os.fstat(err.fileno()).st_size > MAX_PRINTED:
                raise ProbeError("printed", f"printed over {MAX_PRINTED >> 20} MiB", limit=MAX_PRINTED)
            if code is not None:
                return code
            if time.monotonic() > deadline:
                raise ProbeError("timeout", f"took over {PROBE_SECONDS:g} s", limit=PROBE_SECONDS)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _tail(f: Any) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - (1 << 20)))
    data: bytes = f.read()
    return data.decode("utf-8", "replace")
