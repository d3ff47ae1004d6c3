"""The web_search providers: the fixture mock (shape errors with pointers, hostile regexes on
RE2) and SearXNG over a real loopback server (huge, slow, broken and compressed answers)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug import Request, Response

from workbench import WorkbenchError
from workbench.providers.websearch import (
    MAX_BODY_BYTES,
    MAX_COUNT,
    MAX_FIELD_CHARS,
    MAX_FIXTURE_BYTES,
    MockWebSearch,
    SearxWebSearch,
    WebSearch,
    load_fixtures,
)

R1 = {"title": "One", "url": "https://one.example/", "snippet": "first"}
R2 = {"title": "Two", "url": "https://two.example/"}  # snippet is optional


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "web_search.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def error(fn: Any, *args: Any, **kw: Any) -> WorkbenchError:
    with pytest.raises(WorkbenchError) as info:
        fn(*args, **kw)
    return info.value


# == the mock ====================================================================================


def test_mock_exact_then_regex_in_file_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            {"query": "/^rust/i", "results": [R2]},
            {"query": "rust lang", "results": [R1, R2]},
            {"query": "/lang/", "results": []},
            {"query": "/usr/bin", "results": [R1]},  # not /…/flags: exact text
        ],
    )
    ws: WebSearch = MockWebSearch.from_file(path)
    assert ws.search("rust lang", 5, timeout=5) == [R1, {**R2, "snippet": ""}]  # exact wins
    assert ws.search("rust lang", 1, timeout=5) == [R1]  # count clips
    assert ws.search("RUST book", 5, timeout=5) == [{**R2, "snippet": ""}]  # /i
    assert ws.search("golang", 5, timeout=5) == []
    assert ws.search("/usr/bin", 5, timeout=5) == [R1]
    e = error(ws.search, "python", 5, timeout=5)
    assert e.code == "E_NOT_FOUND" and e.details["query"] == "python" and "'python'" in e.message
    assert e.details["file"] == str(path)


def test_mock_clips_fields_and_copies_results() -> None:
    ws = MockWebSearch(
        [{"query": "q", "results": [{"title": "t" * 5000, "url": "https://u.example/", "snippet": "s" * 9}]}]
    )
    out = ws.search("q", 3, timeout=5)
    assert len(out[0]["title"]) == MAX_FIELD_CHARS and out[0]["snippet"] == "s" * 9
    out[0]["title"] = "changed"
    assert ws.search("q", 3, timeout=5)[0]["title"] == "t" * MAX_FIELD_CHARS


@pytest.mark.parametrize(
    "query, count, field",
    [("", 3, "query"), ("  ", 3, "query"), (5, 3, "query"), ("q" * 1001, 3, "query"),
     ("q", 0, "count"), ("q", MAX_COUNT + 1, "count"), ("q", True, "count"), ("q", "3", "count"),
     ("q", 2.0, "count")],
)  # fmt: skip
def test_bad_requests_are_invalid_arguments(query: Any, count: Any, field: str) -> None:
    e = error(MockWebSearch([]).search, query, count, timeout=5)
    assert e.code == "E_INVALID_ARGUMENT" and e.details["field"] == field


def test_lone_surrogates_in_the_query_are_made_well_formed() -> None:
    ws = MockWebSearch([{"query": "a\ufffdb", "results": [R1]}, {"query": "/x.y/", "results": []}])
    assert ws.search("a\ud800b", 1, timeout=5) == [R1]
    assert ws.search("x\udfffy", 1, timeout=5) == []


@pytest.mark.parametrize(
    "data, pointer, words",
    [
        ({"query": "q"}, "", "list"),
        ([{"query": "q"}], "/0", "exactly"),
        ([{"query": "q", "results": [], "extra": 1}], "/0", "exactly"),
        ([{"query": 3, "results": []}], "/0/query", "string"),
        ([{"query": "", "results": []}], "/0/query", "non-empty"),
        ([{"query": "q", "results": {}}], "/0/results", "list"),
        ([{"query": "q", "results": [R1] * (MAX_COUNT + 1)}], "/0/results", "at most"),
        ([{"query": "q", "results": [{"title": "t"}]}], "/0/results/0", '"url"'),
        ([{"query": "q", "results": [{**R1, "rank": 1}]}], "/0/results/0", "optionally"),
        ([{"query": "q", "results": [R1, {**R1, "snippet": None}]}], "/0/results/1/snippet", "string"),
        ([{"query": "q", "results": [{**R1, "url": "javascript:alert(1)"}]}], "/0/results/0/url", "http"),
        ([{"query": "q", "results": [{**R1, "url": "file:///etc/passwd"}]}], "/0/results/0/url", "http"),
        ([{"query": "q", "results": [{**R1, "url": "https:///nohost"}]}], "/0/results/0/url", "http"),
        ([{"query": "q", "results": []}, {"query": "q", "results": []}], "/1/query", "already at /0"),
        ([{"query": "/(a)\\1/", "results": []}], "/0/query", "RE2"),
        ([{"query": "/(?=a)b/", "results": []}], "/0/query", "RE2"),
        ([{"query": "/a(/", "results": []}], "/0/query", "RE2"),
        ([{"query": "/a/g", "results": []}], "/0/query", "flag"),
        ([{"query": "/" + "a" * 600 + "/", "results": []}], "/0/query", "500"),
        ([{"query": "q" * 1001, "results": []}], "/0/query", "no query can match"),
        ([{"query": "q", "results": []}] * 501, "", "limit"),
    ],
)
def test_fixture_shape_errors_name_file_and_pointer(
    tmp_path: Path, data: Any, pointer: str, words: str
) -> None:
    path = write(tmp_path, data)
    e = error(load_fixtures, path)
    assert e.code == "E_MANIFEST" and e.details == {"file": str(path), "pointer": pointer}
    assert words in e.message and str(path) in e.message


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:(?:a{1000}){1000}){1000}",  # the `regex` package ran out of memory compiling this
        "a{1001}",
        "(?:.{999}x)" * 12,  # over RE2's memory budget (REGEX_MAX_MEM)
    ],
)
def test_hostile_patterns_are_refused_when_loading(tmp_path: Path, pattern: str) -> None:
    e = error(load_fixtures, write(tmp_path, [{"query": f"/{pattern}/", "results": []}]))
    assert e.code == "E_MANIFEST" and e.details["pointer"] == "/0/query"


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "(a*)*b", "(x+x+)+y", r"(\w+\s?)*$", "(.*a){20}"])
def test_catastrophic_backtracking_patterns_run_in_linear_time(pattern: str) -> None:
    ws = MockWebSearch([{"query": f"/{pattern}/", "results": [R1]}])
    query = "a" * 999 + "!"
    try:  # on a backtracking engine these take longer than the universe's age: finishing is the test
        assert ws.search(query, 1, timeout=60) in ([], [R1])
    except WorkbenchError as e:
        assert e.code == "E_NOT_FOUND"


def test_the_call_timeout_bounds_all_patterns_together() -> None:
    ws = MockWebSearch([{"query": f"/x{i}/", "results": []} for i in range(100)])
    e = error(ws.search, "nothing matches", 1, timeout=0)
    assert e.code == "E_TIMEOUT" and e.details["pointer"] == "/0"


def test_fixture_file_bounds(tmp_path: Path) -> None:
    big = write(tmp_path, " " * (MAX_FIXTURE_BYTES + 1))
    assert "bytes" in error(load_fixtures, big).message
    deep = write(tmp_path, "[" * 200_000 + "]" * 200_000)
    assert "JSON" in error(load_fixtures, deep).message
    assert error(load_fixtures, tmp_path / "missing.json").code == "E_MANIFEST"
    assert error(load_fixtures, write(tmp_path, "{not json")).code == "E_MANIFEST"
    os.mkfifo(tmp_path / "fifo.json")  # opening it would wait for a writer forever
    assert "regular file" in error(load_fixtures, tmp_path / "fifo.json").message


@settings(max_examples=150, deadline=None)
@given(query=st.text(max_size=60), count=st.one_of(st.integers(-3, 30), st.none(), st.text(max_size=3)))
def test_any_query_gives_results_or_a_coded_error(query: str, count: Any) -> None:
    ws = MockWebSearch([{"query": "/^[a-z]+$/", "results": [R1]}, {"query": "/\\d{3}/i", "results": []}])
    try:
        out = ws.search(query, count, timeout=5)
    except WorkbenchError as e:
        assert e.code in ("E_INVALID_ARGUMENT", "E_NOT_FOUND")
    else:
        assert out in ([R1][:count], [])


@settings(max_examples=150, deadline=None)
@given(pattern=st.text(max_size=40))
def test_any_pattern_loads_or_is_a_coded_error(pattern: str) -> None:
    try:
        ws = MockWebSearch([{"query": f"/{pattern}/", "results": []}])
    except WorkbenchError as e:
        assert e.code == "E_MANIFEST"
    else:
        try:
            ws.search("some query", 1, timeout=5)
        except WorkbenchError as e:
            assert e.code == "E_NOT_FOUND"


# == SearXNG on a real loopback server ===========================================================

SEARX = {
    "query": "rust",
    "results": [
        {"title": "Rust", "url": "https://rust-lang.org/", "content": "A language", "engine": "x"},
        {"title": "No url"},
        "not an object",
        {"title": "Book", "url": "https://doc.rust-lang.org/book/", "content": None},
        {"title": "Third", "url": "https://3.example/", "content": "c" * 5000},
    ],
}


@pytest.fixture
def searx(httpserver: Any) -> Iterator[Any]:
    """search(path, handler or JSON, count=5, timeout=5) against the loopback server."""
    made: list[SearxWebSearch] = []

    def run(answer: Any, *, count: int = 5, timeout: float = 5, path: str = "/search") -> list[dict]:
        if callable(answer):
            httpserver.expect_request(path).respond_with_handler(answer)
        else:
            httpserver.expect_request(path).respond_with_json(answer)
        ws = SearxWebSearch(httpserver.url_for(path))
        made.append(ws)
        return ws.search("rust", count, timeout=timeout)

    yield run
    for ws in made:
        ws.close()


def test_searx_maps_results_and_sends_the_query(searx: Any, httpserver: Any) -> None:
    out = searx(SEARX)
    assert out == [
        {"title": "Rust", "url": "https://rust-lang.org/", "snippet": "A language"},
        {"title": "Book", "url": "https://doc.rust-lang.org/book/", "snippet": ""},
        {"title": "Third", "url": "https://3.example/", "snippet": "c" * MAX_FIELD_CHARS},
    ]
    request, _ = httpserver.log[0]
    assert request.method == "GET" and request.args.to_dict() == {"q": "rust", "format": "json"}
    assert "cookie" not in request.headers


def test_searx_drops_results_whose_url_is_not_a_web_address(searx: Any) -> None:
    links = [
        "javascript:alert(1)",
        "data:text/html,<script>x</script>",
        "file:///etc/passwd",
        "//no-scheme.example/",
        "https://ok.example/\n<script>",
        "http://[::1",
        "https://ok.example/a",
    ]
    out = searx({"results": [{"title": str(i), "url": u} for i, u in enumerate(links)]})
    assert [r["url"] for r in out] == ["https://ok.example/a"]


def test_searx_count_and_existing_query_parameters(httpserver: Any) -> None:
    httpserver.expect_request(
        "/s", query_string={"lang": "en", "q": "rust", "format": "json"}
    ).respond_with_json(SEARX)
    ws = SearxWebSearch(httpserver.url_for("/s") + "?lang=en")
    try:
        assert [r["title"] for r in ws.search("rust", 1, timeout=5)] == ["Rust"]
    finally:
        ws.close()


@pytest.mark.parametrize(
    "answer, code, reason",
    [
        (lambda r: Response("nope", status=500), "E_HTTP", "status"),
        (lambda r: Response("", status=302, headers={"Location": "/elsewhere"}), "E_HTTP", "status"),
        (lambda r: Response("<html>", content_type="text/html"), "E_HTTP", "json"),
        (lambda r: Response("[" * 100_000 + "]" * 100_000), "E_HTTP", "json"),
        ({"results": {"not": "a list"}}, "E_HTTP", "json"),
        ([1, 2], "E_HTTP", "json"),
        (lambda r: Response(b"\x1f\x8b garbage", headers={"Content-Encoding": "gzip"}), "E_HTTP", "decoding"),
    ],
)
def test_searx_broken_answers_are_coded(searx: Any, answer: Any, code: str, reason: str) -> None:
    e = error(searx, answer)
    assert e.code == code and e.details["reason"] == reason


def test_searx_403_hints_at_the_json_format(searx: Any) -> None:
    e = error(searx, lambda r: Response("Forbidden", status=403))
    assert e.details["status"] == 403 and "search.formats" in e.message


def _chunks(total: int) -> Iterator[bytes]:
    for _ in range(total // 65536 + 1):
        yield b" " * 65536


@pytest.mark.parametrize(
    "handler",
    [
        lambda r: Response(b" " * (MAX_BODY_BYTES + 1)),  # Content-Length says so: nothing read
        lambda r: Response(_chunks(MAX_BODY_BYTES * 4)),  # chunked: cut while streaming
        lambda r: Response(  # a gzip bomb: 20 MiB of spaces in a few KiB
            gzip.compress(b" " * 20 * 1024 * 1024), headers={"Content-Encoding": "gzip"}
        ),
    ],
)
def test_searx_huge_answers_are_refused(searx: Any, handler: Any) -> None:
    e = error(searx, handler)
    assert e.code == "E_TOO_LARGE" and e.details["max_bytes"] == MAX_BODY_BYTES


def test_searx_body_just_under_the_cap_is_read(searx: Any) -> None:
    body = json.dumps(SEARX).encode()
    padded = body[:-1] + b" " * (MAX_BODY_BYTES - len(body)) + b"}"
    assert len(searx(lambda r: Response(padded, content_type="application/json"))) == 3


def test_searx_slow_drip_is_cut_at_the_deadline(searx: Any) -> None:
    stop = threading.Event()

    def drip(req: Request) -> Response:
        def body() -> Iterator[bytes]:
            yield b'{"results": ['
            for _ in range(400):  # at most ~20 s, and the test stops it sooner
                if stop.is_set():
                    return
                yield b" "
                time.sleep(0.05)

        return Response(body(), content_type="application/json")

    try:
        e = error(searx, drip, timeout=1)
    finally:
        stop.set()
    assert e.code == "E_TIMEOUT" and e.details["timeout"] == 1


def test_searx_slow_headers_are_cut_at_the_deadline() -> None:
    """A raw server that never finishes its headers: only the total deadline stops it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    stop = threading.Event()

    def serve() -> None:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for i in range(400):
                    if stop.is_set():
                        return
                    conn.sendall(b"X-Drip-%d: x\r\n" % i)
                    time.sleep(0.05)
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ws = SearxWebSearch(f"http://127.0.0.1:{sock.getsockname()[1]}/search")
    try:
        e = error(ws.search, "rust", 3, timeout=1)
    finally:
        stop.set()
        sock.close()
        ws.close()
        thread.join(5)
    assert e.code == "E_TIMEOUT"


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_searx_with_no_time_left_is_a_timeout(searx: Any, timeout: float) -> None:
    assert error(searx, SEARX, timeout=timeout).code == "E_TIMEOUT"


def test_searx_connection_refused_is_e_http() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = error(SearxWebSearch(f"http://127.0.0.1:{port}/").search, "rust", 3, timeout=5)
    assert e.code == "E_HTTP" and e.details["reason"] == "connection"


@pytest.mark.parametrize("url", ["ftp://example.org/", "not a url", "http://", "/search"])
def test_searx_url_must_be_http(url: str) -> None:
    assert error(SearxWebSearch, url).code == "E_USAGE"


def test_searx_takes_an_httpx_transport() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=SEARX)

    ws = SearxWebSearch("https://searx.example/search", transport=httpx.MockTransport(handler))
    assert len(ws.search("rust", 2, timeout=5)) == 2
    assert seen[0].url.params["q"] == "rust" and seen[0].url.params["format"] == "json"
    ws.close()
