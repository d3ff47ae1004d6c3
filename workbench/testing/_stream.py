"""The notebook test kernel's stdout and stderr: what a flush sends, in messages of at most
CHUNK characters.

ipykernel sends all a stream buffered since its last flush (up to 0.2 s of prints) as one
message: a print loop made messages of hundreds of MB, over the client's MESSAGE_LIMIT
(_iopub) although no single print was. Chunked, such a loop is what it is, a flood, counted
towards FLOOD_LIMIT. Loaded in the kernel process, by name (`KERNEL_ARGUMENTS` of _kernel).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ipykernel.iostream import OutStream

#: Characters of one stream message (escaped JSON, at most 6 bytes each: under MESSAGE_LIMIT; few,
#: as _iopub.QUEUE of them may wait in the client; not much smaller: each costs the kernel's IOPub
#: thread GIL handovers with a printing cell, and 64 Ki ones stalled it).
CHUNK = 1024 * 1024
#: Characters of a flush's first message: small enough for the head a cell keeps (_outputs.HEAD).
FIRST = 64 * 1024


class ChunkedOutStream(OutStream):
    """ipykernel's OutStream, each flush's text sent in chunks of at most CHUNK characters."""

    def _flush_buffers(self) -> Iterator[tuple[dict[str, Any], str]]:
        for parent, data in super()._flush_buffers():
            yield parent, data[:FIRST]
            for start in range(FIRST, len(data), CHUNK):
                yield parent, data[start : start + CHUNK]


def load_ipython_extension(ipython: object) -> None:
    """In a notebook test's kernel: its IOPub socket waits for the test's client instead of
    dropping messages. zmq's PUB sockets drop what passes the high-water mark (1,000 messages
    here, plus the client's _iopub.QUEUE), so a cell displaying 12,000 results on a busy machine
    lost its end and the kernel's idle status; with XPUB_NODROP the kernel's IOPub thread waits,
    and the cell with it: a flood is paced by the client that bounds it, not cut short."""
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    if not IPKernelApp.initialized():
        return
    thread = IPKernelApp.instance().iopub_thread
    socket = getattr(thread, "socket", None)
    if thread is None or socket is None or socket.type != zmq.XPUB:
        return
    # set from the IOPub thread, which owns the socket (zmq sockets are not thread-safe)
    thread.io_loop.add_callback(lambda: socket.setsockopt(zmq.XPUB_NODROP, 1))
