"""The Gem Workbench kernel: the IPython kernel with the `workbench` extension preloaded.

Started by Jupyter as `python -m workbench.kernel -f {connection_file}` (the kernelspec in
extension/kernelspec/). Kernel start stays as fast as the plain python3 kernel's: nothing heavy
(pandas, jsonschema, ipywidgets, nbclient) is imported here or by the extension at load.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from traitlets import Type

from . import __version__

#: The extension the kernel loads, as `%load_ext` would.
EXTENSION = "workbench"


class WorkbenchKernel(IPythonKernel):
    """IPythonKernel that loads the workbench extension (magics `%gem`, `%tool`, `%state`) and
    binds `workbench` in the user namespace, next to the `bench` that `%gem open` binds."""

    implementation = "gem-workbench"
    implementation_version = __version__
    # JupyterLab's debugger panel: debugpy for Python, the workbench's own for JS/TS tools
    # (workbench/debug/kernel.py; named, not imported, so kernel start stays light)
    debugger_class = Type("workbench.debug.kernel.WorkbenchDebugger")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: Why the extension did not load (None: it loaded). A broken extension must not kill
        #: the kernel: the author still gets a working Python kernel and a warning in its log.
        self.extension_error: str | None = None
        shell = self.shell
        assert shell is not None  # IPythonKernel.__init__ made it
        shell.push({"workbench": sys.modules[__package__ or "workbench"]}, interactive=False)
        try:
            shell.extension_manager.load_extension(EXTENSION)
            _quiet_load_ext(shell)
        except Exception as exc:  # noqa: BLE001 - any failure is reported, never fatal
            self.extension_error = f"{type(exc).__name__}: {exc}"
            self.log.warning(
                "Gem Workbench: could not load the %r extension (%s); the kernel "
                "runs without its magics. Try `%%load_ext %s` to see the error.",
                EXTENSION,
                self.extension_error,
                EXTENSION,
                exc_info=True,
            )
        _assert_rewriting(shell, self.log)

    async def shutdown_request(self, stream: Any, ident: Any, parent: Any) -> None:
        """ipykernel's shutdown, with the shell loop stopped only after this control message
        is done.

        ipykernel (7.4) stops the shell loop from inside this handler; the control thread then
        flushes stdout and stderr through the IOPub thread. The main thread, its loop stopped,
        closes the IOPub thread meanwhile, and a flush that lost that race waits its 10 s
        timeout: about one shutdown in 15 took 10-20 s here (the same race as
        posit-dev/positron#7142). Here the loops stop from a callback on the control loop,
        which runs once the handler's caller has flushed.
        """
        if not self.session:
            return
        content = self.do_shutdown(parent["content"]["restart"])
        if inspect.isawaitable(content):
            content = await content
        self.session.send(stream, "shutdown_reply", content, parent, ident=ident)
        self._shutdown_message = self.session.msg("shutdown_reply", content, parent)  # type: ignore[assignment]  # None in the class body
        await self._at_shutdown()
        loops = [self.io_loop]
        if self.shell_stream and self.shell_stream.io_loop is not self.io_loop:
            loops.append(self.shell_stream.io_loop)
        if self.control_stream:
            loops.append(self.control_stream.io_loop)  # last: it runs this callback
            control = self.control_stream.io_loop
        else:
            control = self.io_loop

        def stop() -> None:
            for loop in loops:
                loop.add_callback(loop.stop)

        control.add_callback(stop)

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        """complete_request: at a workbench argument (`%tool ⇥`, `bench.call('⇥`, …) the
        workbench's matches only, none included (IPython would add Python keywords and magic
        names); elsewhere IPython's completion (workbench/jupyter/complete.py)."""
        found = None
        if self.extension_error is None:
            from .jupyter.complete import complete

            found = complete(self.shell, code, cursor_pos)
        if found is None:
            reply = super().do_complete(code, cursor_pos)  # IPythonKernel's is not async
            return await reply if inspect.isawaitable(reply) else reply
        end = len(code) if cursor_pos is None else cursor_pos
        return {
            "matches": found.matches,
            "cursor_start": found.start,
            "cursor_end": end,
            "metadata": {
                "_jupyter_types_experimental": [
                    {"start": found.start, "end": end, "text": m, "type": found.type, "signature": ""}
                    for m in found.matches
                ]
            },
            "status": "ok",
        }

    @property
    def banner(self) -> str:  # type: ignore[override]  # a plain attribute in Kernel
        from IPython import __version__ as ipython_version

        return (
            f"Gem Workbench {__version__} (IPython {ipython_version}, Python "
            f"{sys.version.split()[0]})\n"
            "%gem open PATH [--real] · %tool NAME {json} · %%tool NAME · "
            "%state files|data NAME|kv|sql QUERY|calls\n"
        )


def _assert_rewriting(shell: Any, log: Any) -> None:
    """`%assert_rewrite on|off`; pytest's assertion rewriting of cells from the start if
    GEM_WORKBENCH_ASSERT_REWRITE=1 (notebook tests set it). See workbench.testing._asserts."""
    try:
        from .testing import _asserts

        _asserts.setup(shell)
    except Exception:  # noqa: BLE001 - as for the extension: never fatal
        log.warning("Gem Workbench: could not set up assertion rewriting", exc_info=True)


def _quiet_load_ext(shell: Any) -> None:
    """Make `%load_ext workbench` a silent no-op once the kernel has loaded it.

    Tutorials keep the line so they also run on a plain IPython kernel; on this kernel IPython
    would print "already loaded" as the notebook's first output.
    """
    original = shell.find_line_magic("load_ext")
    if original is None:
        return

    def load_ext(line: str) -> Any:
        if line.strip() == EXTENSION and EXTENSION in shell.extension_manager.loaded:
            return None
        return original(line)

    load_ext.__doc__ = original.__doc__
    shell.register_magic_function(load_ext, "line", "load_ext")


def main() -> None:
    """Run the kernel (what `python -m workbench.kernel -f CONNECTION_FILE` does)."""
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=WorkbenchKernel)


if __name__ == "__main__":
    # As ipykernel_launcher does: `-m` put the working folder first on sys.path, which would let
    # a notebook folder's own modules shadow ours; IPython adds it back (after the stdlib).
    from pathlib import Path

    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    # Run the importable class (workbench.kernel.WorkbenchKernel), not this __main__ copy.
    from workbench.kernel import main as _main

    _main()
