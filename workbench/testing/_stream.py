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


class ChunkedOutStream(OutStream):  # type: ignore[misc]
    """ipykernel's OutStream, each flush's text sent in chunks of at most CHUNK characters."""

    def _flush_buffers(self) -> Iterator[tuple[dict[str, Any], str]]:
        for parent, data in super()._flush_buffers():
            yield parent, data[:FIRST]
            for start in range(FIRST, len(data), CHUNK):
                yield parent, data[start : start + CHUNK]
