"""Web search behind the agent platform's `web_search` built-in: one narrow interface,
`WebSearch.search(query, count, *, timeout) -> [{title, url, snippet}]`, a mock answering from
`fixtures/web_search.json` and a real one over a SearXNG-compatible JSON endpoint.

Everything is bounded: at most MAX_COUNT results, each field clipped to MAX_FIELD_CHARS, an
answer body at most MAX_BODY_BYTES, the fixture file at most MAX_FIXTURE_BYTES. Fixture regexes
run on RE2 (PyPI `google-re2`): linear-time matching, no backtracking, and a compile-memory cap
(REGEX_MAX_MEM), so a hostile pattern can neither hang the search nor exhaust memory (the
`regex` package's `timeout=` bounds matching only: its compiler expands counted repeats, and
`(?:(?:a{1000}){1000}){1000}` ran out of memory while compiling). RE2 has no backreferences or
look-arounds; a pattern that uses them is reported when the fixtures load.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._errors import GemLoadError, UsageError, WorkbenchError
from .._text import re2_compile, well_formed

MAX_COUNT = 20  # results one search may return
MAX_FIELD_CHARS = 2_000  # each of title, url, snippet is clipped to this
MAX_QUERY_CHARS = 1_000
MAX_BODY_BYTES = 2 * 1024 * 1024  # a SearXNG answer, after decompression
MAX_FIXTURE_BYTES = 1024 * 1024  # fixtures/web_search.json
MAX_ENTRIES = 500  # entries in the fixture file
MAX_PATTERN_CHARS = 500  # a /regex/ query in the fixture file

FIELDS = ("title", "url", "snippet")


class WebSearch(Protocol):
    """A search engine: the first `count` results for `query`, within `timeout` seconds."""

    def search(self, query: str, count: int, *, timeout: float) -> list[dict[str, str]]: ...


def check_request(query: Any, count: Any) -> tuple[str, int]:
    """The query (well-formed, stripped of nothing) and count, or E_INVALID_ARGUMENT."""
    if not isinstance(query, str) or not query.strip():
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", "web_search: `query` must be a non-empty string", field="query"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"web_search: `query` is {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}",
            field="query",
            limit=MAX_QUERY_CHARS,
        )
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"web_search: `count` must be a whole number from 1 to {MAX_COUNT}, not {str(count)[:40]}",
            field="count",
            limit=MAX_COUNT,
        )
    return well_formed(query), count


def make_result(title: str, url: str, snippet: str) -> dict[str, str]:
    """One result as the tool sees it: three well-formed strings, each clipped."""
    return {k: well_formed(v[:MAX_FIELD_CHARS]) for k, v in zip(FIELDS, (title, url, snippet))}


def web_url(text: str) -> bool:
    """A result's url is a web address (absolute http/https with a host), as a real search
    engine's are: a `javascript:`, `data:` or `file:` link never reaches a tool, from a fixture
    (a load error) or from a real endpoint (the entry is dropped)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and text.isprintable()
    except ValueError:
        return False


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "…"


# --- the mock --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixtureEntry:
    """One fixture: an exact query, or a compiled RE2 pattern (from "/…/" or "/…/i")."""

    query: str
    pattern: Any  # re2 compiled pattern, or None for an exact query
    results: tuple[dict[str, str], ...]
    pointer: str  # where it is in its file, e.g. "/3"


def compile_pattern(source: str) -> Any:
    """RE2 pattern for "/body/" or "/body/i" (ValueError with RE2's reason if refused)."""
    body, _, flags = source[1:].rpartition("/")
    if flags not in ("", "i"):
        raise ValueError(f"unknown flag(s) {flags!r} after the closing '/': only 'i' is supported")
    if not body:
        raise ValueError("the pattern between the slashes is empty")
    return re2_compile(body, case_sensitive=flags != "i")


def _is_pattern(query: str) -> bool:
    """ "/…/" or "/…/flags" with JavaScript's flag letters; anything else ("/usr/bin") is exact."""
    body, slash, flags = query[1:].rpartition("/")
    return query.startswith("/") and bool(slash and body) and set(flags) <= set("dgimsuvy")


def parse_entries(data: Any, source: str) -> list[FixtureEntry]:
    """Validate the fixture shape `[{"query": ..., "results": [{title, url, snippet?}]}]`;
    GemLoadError naming `source` and the JSON pointer of the first thing wrong."""

    def bad(pointer: str, what: str) -> GemLoadError:
        return GemLoadError(f"{source} {pointer or '/'}: {what}", file=source, pointer=pointer)

    if not isinstance(data, list):
        raise bad("", 'expected a list of {"query": ..., "results": [...]} entries')
    if len(data) > MAX_ENTRIES:
        raise bad("", f"{len(data):,} entries, over the limit of {MAX_ENTRIES:,}")
    entries: list[FixtureEntry] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(data):
        at = f"/{i}"
        if not isinstance(raw, Mapping) or set(raw) != {"query", "results"}:
            raise bad(at, 'expected an object with exactly the keys "query" and "results"')
        query, results = raw["query"], raw["results"]
        if not isinstance(query, str) or not query.strip():
            raise bad(f"{at}/query", "expected a non-empty string (exact text, or /regex/)")
        pattern = None
        if _is_pattern(query):
            if len(query) > MAX_PATTERN_CHARS:
                raise bad(f"{at}/query", f"the pattern is over {MAX_PATTERN_CHARS} characters")
            try:
                pattern = compile_pattern(query)
            except (ValueError, UnicodeError) as exc:
                raise bad(f"{at}/query", str(exc)) from None
        elif len(query) > MAX_QUERY_CHARS:
            raise bad(f"{at}/query", f"over {MAX_QUERY_CHARS:,} characters: no query can match it")
        elif query in seen:
            raise bad(f"{at}/query", f"the same query is already at {seen[query]}")
        else:
            seen[query] = at
        if not isinstance(results, list) or len(results) > MAX_COUNT:
            raise bad(f"{at}/results", f"expected a list of at most {MAX_COUNT} results")
        rows = []
        for j, r in enumerate(results):
            rat = f"{at}/results/{j}"
            if not isinstance(r, Mapping) or not {"title", "url"} <= set(r) or set(r) - set(FIELDS):
                raise bad(rat, 'expected an object with "title", "url" and optionally "snippet"')
            for k in FIELDS:
                if not isinstance(r.get(k, ""), str):
                    raise bad(f"{rat}/{k}", "expected a string")
            if not web_url(r["url"]):
                raise bad(f"{rat}/url", "expected an absolute http:// or https:// address")
            rows.append(make_result(r["title"], r["url"], r.get("snippet", "")))
        entries.append(FixtureEntry(query, pattern, tuple(rows), at))
    return entries


def load_fixtures(path: str | Path) -> list[FixtureEntry]:
    """Read and validate a web_search.json fixture file (at most MAX_FIXTURE_BYTES)."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise GemLoadError(f"{path}: not a regular file", file=str(path))
    try:
        with path.open("rb") as fp:
            raw = fp.read(MAX_FIXTURE_BYTES + 1)
    except OSError as exc:
        raise GemLoadError(f"{path}: cannot be read ({exc.strerror or exc})", file=str(path)) from None
    if len(raw) > MAX_FIXTURE_BYTES:
        raise GemLoadError(f"{path}: over {MAX_FIXTURE_BYTES:,} bytes", file=str(path), pointer="")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise GemLoadError(f"{path}: not valid JSON ({_short(str(exc), 120)})", file=str(path)) from None
    return parse_entries(data, str(path))


class MockWebSearch:
    """Answers from fixtures: an exact query first, else the first /regex/ (in file order)
    that matches anywhere in the query; no match is E_NOT_FOUND naming the query."""

    kind = "mock"

    def __init__(self, entries: Iterable[FixtureEntry | Mapping[str, Any]] = (), *, source: str = "entries"):
        given = list(entries)
        if all(isinstance(e, FixtureEntry) for e in given):
            parsed: list[FixtureEntry] = given  # type: ignore[assignment]
        else:
            parsed = parse_entries(given, source)
        self.source = source
        self.entries = parsed
        self._exact: dict[str, FixtureEntry] = {}
        for e in parsed:
            if e.pattern is None:
                self._exact.setdefault(e.query, e)
        self._patterns = [e for e in parsed if e.pattern is not None]

    @classmethod
    def from_file(cls, path: str | Path) -> MockWebSearch:
        """The mock for a fixture file (see load_fixtures)."""
        return cls(load_fixtures(path), source=str(path))

    def search(self, query: str, count: int, *, timeout: float) -> list[dict[str, str]]:
        query, count = check_request(query, count)
        deadline = time.monotonic() + timeout
        entry = self._exact.get(query)
        if entry is None:
            for e in self._patterns:
                if time.monotonic() >= deadline:  # RE2 bounds each match; this bounds them all
                    raise WorkbenchError(
                        "E_TIMEOUT",
                        f"web_search: matching the fixture patterns ran over {timeout:g} s (at {self.source} {e.pointer})",
                        timeout=timeout,
                        pointer=e.pointer,
                    )
                if e.pattern.search(query):
                    entry = e
                    break
        if entry is None:
            raise WorkbenchError(
                "E_NOT_FOUND",
                f"web_search: no fixture matches the query {_short(query)!r}: add "
                f'{{"query": ..., "results": [...]}} to {self.source}',
                query=query,
                file=self.source,
            )
        return [dict(r) for r in entry.results[:count]]


# --- SearXNG ---------------------------------------------------------------------------------


class SearxWebSearch:
    """A SearXNG-compatible endpoint: `GET {url}?q=…&format=json`, results under `results[]`
    (`title`, `url`, `content` → snippet). Stateless (no cookies, no kept-alive connection,
    no redirects followed); a total deadline per search; the body bounded while it streams.
    Result URLs are passed on as given (any scheme): vetting them is the platform's job."""

    kind = "real"

    def __init__(self, url: str, *, transport: Any = None, verify: Any = True) -> None:
        import httpx

        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise UsageError(f"web search url {url!r}: {exc}") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise UsageError(f"web search url {url!r}: give an http:// or https:// address")
        self.url = url
        self._transport = transport
        self._verify = verify
        self._client: Any = None

    def _http(self) -> Any:
        import httpx

        from .httpreal import no_cookie_jar

        if self._client is None:
            self._client = httpx.Client(
                transport=self._transport,
                verify=self._verify,
                follow_redirects=False,
                trust_env=False,
                cookies=no_cookie_jar(),
                limits=httpx.Limits(max_keepalive_connections=0),  # the watchdog sees every socket
            )
        return self._client

    def search(self, query: str, count: int, *, timeout: float) -> list[dict[str, str]]:
        query, count = check_request(query, count)
        if timeout <= 0:  # the caller's budget is spent: no request at all
            raise _fail("E_TIMEOUT", self.url, "no time left for a search", timeout=timeout)
        data = _get_json(self._http(), self.url, {"q": query, "format": "json"}, timeout)
        return _searx_results(data, count, self.url)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _fail(code: str, url: str, what: str, **details: Any) -> WorkbenchError:
    return WorkbenchError(code, f"web_search: {url}: {what}", url=url, **details)


def _get_json(client: Any, url: str, params: dict[str, str], timeout: float) -> Any:
    """GET within `timeout` seconds in all, a 200 answer of at most MAX_BODY_BYTES, as JSON."""
    import zlib

    import httpx

    from .httpreal import ACCEPT_ENCODING, Watchdog, decoded_body, stream_body

    late = _fail("E_TIMEOUT", url, f"no complete answer within {timeout:g} s", timeout=timeout)
    big = _fail("E_TOO_LARGE", url, f"the answer is over {MAX_BODY_BYTES:,} bytes", max_bytes=MAX_BODY_BYTES)
    with Watchdog(timeout) as dog:

        def check() -> None:
            if dog.fired:  # inflating is CPU work the socket cut cannot stop
                raise late

        try:
            with client.stream(
                "GET",
                httpx.URL(url).copy_merge_params(params),  # `params=` would drop the url's own
                headers={"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING},
                timeout=httpx.Timeout(timeout),
                extensions={"trace": dog.trace},
            ) as r:
                if r.status_code != 200:
                    hint = " (is `json` in SearXNG's search.formats?)" if r.status_code == 403 else ""
                    what = f"answered HTTP {r.status_code} {_short(r.reason_phrase, 80)}{hint}"
                    raise _fail("E_HTTP", url, what, reason="status", status=r.status_code)
                declared = r.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                    raise big
                if r.is_stream_consumed:  # an in-memory answer (an httpx.MockTransport): decoded already
                    chunks = iter([r.content])
                else:
                    chunks = decoded_body(r.iter_raw(64 * 1024), r.headers.get("content-encoding"), check)
                body = stream_body(chunks, MAX_BODY_BYTES, lambda: big)
        except zlib.error:
            raise _fail("E_HTTP", url, "the compressed answer is corrupt", reason="decoding") from None
        except httpx.TimeoutException:
            raise late from None
        except httpx.HTTPError as exc:
            if dog.fired:
                raise late from None
            what = f"{type(exc).__name__}: {_short(str(exc))}"
            raise _fail("E_HTTP", url, what, reason="connection") from None
    if dog.fired:  # "end of stream" after the cut is a truncated body
        raise late
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise _fail("E_HTTP", url, "the answer is not JSON (is `format=json` on?)", reason="json") from None


def _searx_results(data: Any, count: int, url: str) -> list[dict[str, str]]:
    """The first `count` usable entries of `results[]` (a string title, a web url; content or "")."""
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise _fail("E_HTTP", url, "the JSON answer has no `results` list", reason="json")
    out: list[dict[str, str]] = []
    for item in results:
        if len(out) == count:
            break
        if not isinstance(item, dict):
            continue
        title, link, content = item.get("title"), item.get("url"), item.get("content")
        if isinstance(title, str) and isinstance(link, str) and web_url(link):
            out.append(make_result(title, link, content if isinstance(content, str) else ""))
    return out
