"""ctx.extract(path, options?) -> {text, mimeType, pages?}: txt/md/csv/html/pdf, ctx.files' rules."""

from __future__ import annotations

import pytest
from _deno import deno_home  # noqa: F401  (fixture)

PY = """
def handle(input, ctx):
    return ctx.extract(input["path"], input.get("options"))
"""
PY_ASYNC = """
async def handle(input, ctx):
    return await ctx.extract(input["path"], input.get("options"))
"""
JS = """
export default async (input, ctx) => {
  try {
    return await ctx.extract(input.path, input.options ?? undefined);
  } catch (e) {
    return { code: e.code, message: e.message };
  }
};
"""


def minimal_pdf(pages: list[str]) -> bytes:
    """A small valid PDF by hand: one Helvetica text line per page, with a correct xref."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i}"
            f" 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


HTML = (
    "<html><head><title>T</title><style>p{color:red}</style><script>var x=1</script>"
    "</head><body><h1>Report</h1><p>Sales &amp; costs</p><ul><li>one</li><li>two</li></ul>"
    "</body></html>"
)


def _bench(gem, opened, source, ext="py"):  # noqa: F811
    gem.tool("ex", source, ext=ext)
    ws = gem.root / "fixtures" / "workspace"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "a.txt").write_text("plain text\n")
    (ws / "docs" / "b.md").write_text("# Title\n\nbody")
    (ws / "docs" / "c.csv").write_text("a,b\n1,2\n")
    (ws / "docs" / "d.html").write_text(HTML)
    (ws / "docs" / "e.pdf").write_bytes(minimal_pdf(["Hello page one", "Second page"]))
    (ws / "docs" / "f.docx").write_bytes(b"PK\x03\x04 not really")
    (ws / ".secret.txt").write_text("hidden")
    return opened(gem)


@pytest.fixture(
    params=[
        pytest.param(("py", PY), id="python"),
        pytest.param(("py", PY_ASYNC), id="python-async"),
        pytest.param(("js", JS), id="js", marks=pytest.mark.deno),
    ]
)
def bench(request, gem, opened):  # noqa: F811
    ext, source = request.param
    return _bench(gem, opened, source, ext)


def _ex(bench, path, options=None):
    res = bench.call("ex", {"path": path, "options": options})
    if res.ok and isinstance(res.value, dict) and "code" in res.value:  # the JS tool caught it
        return res.value["code"], res.value
    return (res.error.code, res.error.message) if res.error else ("ok", res.value)


def test_extract_text_markdown_csv(bench):
    assert _ex(bench, "workspace:docs/a.txt") == ("ok", {"text": "plain text\n", "mimeType": "text/plain"})
    assert _ex(bench, "workspace:docs/b.md")[1]["mimeType"] == "text/markdown"
    code, v = _ex(bench, "workspace:docs/c.csv")
    assert code == "ok" and v == {"text": "a,b\n1,2\n", "mimeType": "text/csv"}


def test_extract_html_gives_text_without_scripts_or_styles(bench):
    code, v = _ex(bench, "workspace:docs/d.html")
    assert code == "ok" and v["mimeType"] == "text/html"
    # the same converter as mail bodies: the <head> (title included) is not text, list items
    # are bullets
    assert [line for line in v["text"].splitlines() if line] == ["Report", "Sales & costs", "- one", "- two"]
    assert "color" not in v["text"] and "var x" not in v["text"]


def test_extract_pdf_pages(bench):
    code, v = _ex(bench, "workspace:docs/e.pdf")
    assert code == "ok" and v["mimeType"] == "application/pdf"
    assert [p.strip() for p in v["pages"]] == ["Hello page one", "Second page"]
    assert "Hello page one" in v["text"] and "Second page" in v["text"]


def test_extract_max_chars(bench):
    assert _ex(bench, "workspace:docs/a.txt", {"maxChars": 5})[1]["text"] == "plain"


def test_extract_unsupported_type_is_named(bench):
    code, msg = _ex(bench, "workspace:docs/f.docx")
    assert code == "E_UNSUPPORTED"
    assert ".docx" in str(msg)


def test_extract_follows_the_files_rules(bench):
    assert _ex(bench, "workspace:.secret.txt")[0] == "E_NOT_FOUND"  # F10: dot-entries
    assert _ex(bench, "workspace:../x.txt")[0] == "E_PATH"
    assert _ex(bench, "workspace:docs/none.txt")[0] == "E_NOT_FOUND"
    assert _ex(bench, "workspace:docs")[0] == "E_IS_A_FOLDER"


def test_extract_reads_the_run_folder_and_is_traced(gem, opened):  # noqa: F811
    src = (
        "def handle(input, ctx):\n    ctx.files.write('out/r.md', '# hi')\n"
        "    return ctx.extract('out/r.md')['text']\n"
    )
    b = opened(gem.tool("ex", src))
    res = b.call("ex")
    assert res.value == "# hi"
    assert res.trace["method"].tolist() == ["files.write", "extract"]


def test_extract_refuses_over_20_mb(gem, opened):  # noqa: F811
    src = (
        "def handle(input, ctx):\n    ctx.files.write('big.txt', 'x' * (20 * 1024 * 1024))\n"
        "    return len(ctx.extract('big.txt')['text'])\n"
    )
    b = opened(gem.tool("ex", src))
    big = b.providers.files
    res = b.call("ex")
    assert res.value == 20 * 1024 * 1024  # exactly 20 MB is allowed
    root = f"run/{res.call_id}"
    big.write(root, "big.txt", b"x" * (20 * 1024 * 1024 + 1))
    from workbench.ctx import CallSession, Capabilities

    session = CallSession(
        call_id=res.call_id,
        tool=b.manifest.tools["ex"],
        manifest=b.manifest,
        providers=b.providers,
        conversation=True,
        strict=False,
        trash=False,
    )
    with pytest.raises(Exception) as info:
        Capabilities(session).call("extract", "big.txt")
    assert getattr(info.value, "code", None) == "E_TOO_LARGE"
