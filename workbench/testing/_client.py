"""A kernel client that is ready as soon as the kernel answers and IOPub is connected.

jupyter_client's `wait_for_ready` (8.x) cost every notebook run 0.2-0.4 s of idle time at its
start, a fifth of the tutorials' serial run:
- after the kernel_info reply it waits up to 0.2 s for an IOPub message, proof that the IOPub
  subscription is live. A subscription that joined after the kernel published the request's
  status (PUB/SUB drops what was sent before) waited the whole 0.2 s, then asked again;
- it then reads IOPub until it has been quiet for 0.2 s.

Here the kernel is asked again after 10, 20, 40 ... ms of silence until IOPub carries a
message: the messaging protocol has a kernel publish its status around every request, so a
live subscription hears one within milliseconds. Nothing needs flushing afterwards: nbclient reads only the messages
whose parent is the cell it runs, on IOPub and shell alike (so the replies to the extra
requests are dropped there).

Imported only when a notebook runs (it imports jupyter_client).
"""

from __future__ import annotations

import time
from queue import Empty

import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient
from traitlets import Type

from ._iopub import BoundedIOPubChannel, limit_messages

#: How long IOPub may stay silent before the kernel is asked again (seconds), at first; the
#: wait doubles with each silence, up to IOPUB_RETRY_MAX (a kernel whose IOPub never connects
#: is not asked thousands of times before the startup timeout).
IOPUB_RETRY = 0.01
IOPUB_RETRY_MAX = 0.2


class ReadyClient(AsyncKernelClient):
    """An AsyncKernelClient whose `wait_for_ready` waits for events, not for quiet, and whose
    sockets receive no frame over `_iopub.MESSAGE_LIMIT` and bound each cell's output."""

    iopub_channel_class = Type(BoundedIOPubChannel)

    def _context_default(self) -> zmq.asyncio.Context:
        context = super()._context_default()
        limit_messages(context)
        return context

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))

        async def still_starting() -> None:
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

        while True:  # the kernel answers on shell
            self.kernel_info()
            try:
                reply = await self.get_shell_msg(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            except Empty:
                reply = None
            if reply is not None and reply.get("msg_type") == "kernel_info_reply":
                break
            await still_starting()
        wait = IOPUB_RETRY
        while True:  # ... and IOPub carries what it publishes
            try:
                await self.get_iopub_msg(timeout=wait)
            except Empty:
                await still_starting()
                self.kernel_info()
                wait = min(2 * wait, IOPUB_RETRY_MAX)
            else:
                break
        self._handle_kernel_info_reply(reply)
