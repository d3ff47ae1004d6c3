"""What calls leave in the bench, bounded (SEC5): a ring that keeps at most so many characters
of rows or results, the oldest dropped first and counted, so that every view can say what went.

A tool controls how much it writes (ctx.audit rows, log rows, a trace, a result); the bench
lives for the whole notebook session. Without a bound, a tool writing 1 MiB audit rows for 20 s
took the bench's process from 35 MB to 2.65 GB, and every later call added to that.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar, overload

T = TypeVar("T")

#: characters a kept row or result costs beyond its content (the dict and its keys), about:
#: ten thousand empty rows are not free
ROW_CHARS = 256
#: what a trace row costs beyond the arguments and result it keeps (its dict, preview and the
#: arguments' tuple: about 520 bytes measured for a ctx call without arguments)
TRACE_ROW_CHARS = 512


class Ring(Sequence[T]):
    """Items in the order appended, at most `cap` characters of them (each item's `size`);
    past it the oldest go, counted in `dropped` and `dropped_chars`. The newest item always
    stays, whatever its size (each one is bounded by the per-call limits already)."""

    def __init__(self, cap: int, size: Callable[[T], int], limit: str) -> None:
        self.cap, self.limit = cap, limit  # `limit`: the Limits field, for the note
        self._size = size
        # the items and, beside them, their sizes (not (item, size) pairs: a bench keeps
        # thousands, and ints, unlike tuples, are nothing the garbage collector walks)
        self._items: deque[T] = deque()
        self._sizes: deque[int] = deque()
        self.chars = 0  # characters held now
        self.appended = 0  # items ever appended: a reader's cursor that drops do not move
        self.dropped = 0
        self.dropped_chars = 0

    def append(self, item: T) -> None:
        n = self._size(item)
        self._items.append(item)
        self._sizes.append(n)
        self.chars += n
        self.appended += 1
        while self.chars > self.cap and len(self._items) > 1:
            self._items.popleft()
            gone = self._sizes.popleft()
            self.chars -= gone
            self.dropped += 1
            self.dropped_chars += gone

    def clear(self) -> None:
        """Forget every item, as list.clear() (a bench's `results` was a list): nothing is
        counted as dropped, and `appended` goes on, so a reader's cursor stays valid."""
        self._items.clear()
        self._sizes.clear()
        self.chars = 0

    def saved(self) -> tuple[Any, ...]:
        """What `put_back` needs to make the ring as it is now (its items shared, not copied)."""
        return (
            list(zip(self._items, self._sizes)),
            self.chars,
            self.appended,
            self.dropped,
            self.dropped_chars,
        )

    def put_back(self, saved: tuple[Any, ...]) -> None:
        """The ring as it was at `saved`: what was appended since goes, what was dropped comes back."""
        items, self.chars, self.appended, self.dropped, self.dropped_chars = saved
        self._items = deque(x for x, _ in items)
        self._sizes = deque(n for _, n in items)

    def since(self, appended: int) -> list[T]:
        """The items appended after the first `appended` ever (those still kept)."""
        first = self.appended - len(self._items)  # how many went before the oldest kept
        return list(islice(self._items, max(appended - first, 0), None))

    def note(self, what: str) -> str | None:
        """What the ring dropped, said for a view; None when it dropped nothing."""
        if not self.dropped:
            return None
        return (
            f"{self.dropped:,} older {what}{'' if self.dropped == 1 else 's'} "
            f"({self.dropped_chars:,} characters) dropped: the bench keeps the newest "
            f"{self.cap:,} characters of them (Limits.{self.limit})"
        )

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(self._items)[i]
        return self._items[i]

    def __repr__(self) -> str:
        return (
            f"<Ring {len(self):,} kept, {self.chars:,} of {self.cap:,} characters, {self.dropped:,} dropped>"
        )
