"""ctx.extract: document-to-text extraction, available to every tool.

The seed names `ctx.extract` but gives no signature. The workbench's reading:

    ctx.extract(path, options?) -> { text, mimeType, pages? }

`path` is a gem path (run folder or `workspace:`), resolved and checked exactly as ctx.files
does (F9–F12: no `..`, no dot-entries in the conversation folder, 20 MB at most). Supported:
plain text, Markdown and CSV (decoded as UTF-8), HTML (the text, scripts and styles dropped,
by the same linear converter as mail bodies: providers/mailhtml.html_to_text) and PDF (pypdf; `pages` is a list with the text of each page). Any other
type fails with E_UNSUPPORTED naming it. `options` may carry `{"maxChars": n}` to cut the text.

Bounds (SEC5): extraction stops at the call's deadline (E_TIMEOUT) and never yields more than
`limits.file_bytes` characters of text (E_TOO_LARGE naming the limit; with `maxChars` it stops
early instead, and `pages` then holds the pages read so far). PDFs are parsed by pypdf in a
child process that is killed at the deadline and capped in memory (a decompression bomb or a
deeply nested object tree cannot stall or exhaust the host); whatever pypdf cannot read is
E_INVALID_ARGUMENT "not a readable PDF", a pypdf limit or the memory cap is E_TOO_LARGE.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..providers.mailhtml import html_to_text
from .files import Files
from .paths import resolve
from .spec import CapabilitySpec

if TYPE_CHECKING:
    from ._session import CallSession

TYPES = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}

PDF_MEMORY_BYTES = 1 << 30  # address space of the PDF child process
PDF_SECONDS = 60.0  # a PDF's time when the call has no deadline


# The PDF child: reads the PDF on stdin, writes {"pages", "cut"} or {"error", "message"} as
# JSON. argv: the parent's sys.path (so pypdf imports as it does here), the character cap,
# the address-space cap.
_PDF_CHILD = r"""
import io, json, sys
sys.path[:] = json.loads(sys.argv[1])
cap, mem = int(sys.argv[2]), int(sys.argv[3])
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
except (ImportError, ValueError, OSError):
    pass

def done(obj):
    sys.stdout.buffer.write(json.dumps(obj, ensure_ascii=False).encode("utf-8"))
    sys.stdout.flush()

try:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError
    reader = PdfReader(io.BytesIO(sys.stdin.buffer.read()))
    pages, total, cut = [], 0, False
    for page in reader.pages:
        text = page.extract_text() or ""
        # lone surrogates (broken font maps) become U+FFFD, as JS's TextDecoder would
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        text = text[:cap + 1]  # one page alone may be over the cap: send no more than needed
        total += len(text) + (2 if pages else 0)  # the blank line that joins pages
        pages.append(text)
        if total > cap:
            cut = True
            break
    done({"pages": pages, "cut": cut})
except MemoryError:
    pages = reader = None  # free what can be freed to answer at all
    done({"error": "memory", "message": "it needs more memory than the extraction may use"})
except RecursionError:
    done({"error": "invalid", "message": "its objects are nested too deeply"})
except LimitReachedError as exc:
    done({"error": "limit", "message": str(exc)})
except Exception as exc:
    done({"error": "invalid", "message": f"{type(exc).__name__}: {exc}"})
"""


def pdf_pages(
    data: bytes, raw: str, *, cap: int, seconds: float | None, memory: int = PDF_MEMORY_BYTES
) -> tuple[list[str], bool]:
    """(pages, cut): the text of each page, stopping once over `cap` characters in all.

    Runs pypdf in a child process bounded by `seconds` (E_TIMEOUT) and `memory` bytes.
    """
    seconds = PDF_SECONDS if seconds is None else seconds
    cmd = [sys.executable, "-I", "-c", _PDF_CHILD, json.dumps(sys.path), str(cap), str(memory)]
    with subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:  # pypdf warns per broken object
        try:
            out, _ = proc.communicate(data, timeout=seconds)
        except subprocess.TimeoutExpired:
            raise WorkbenchError(
                "E_TIMEOUT",
                f"ctx.extract({raw!r}): reading the PDF ran out "
                f"of the call's time ({seconds:.1f} s were left)",
                path=raw,
                method="extract",
            ) from None
        finally:
            if proc.poll() is None:  # timed out, or interrupted (KeyboardInterrupt)
                proc.kill()  # the with block then waits for it and closes the pipes
    try:
        got = json.loads(out)
    except ValueError:  # killed without a word: the kernel's OOM killer, or a crash
        raise WorkbenchError(
            "E_TOO_LARGE" if proc.returncode and proc.returncode < 0 else "E_INVALID_ARGUMENT",
            f"{raw!r} is not a readable PDF: the reader stopped (exit status {proc.returncode})",
            path=raw,
        ) from None
    if "error" not in got:
        return got["pages"], got["cut"]
    if got["error"] == "invalid":
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", f"{raw!r} is not a readable PDF: {got['message']}", path=raw
        )
    limit = memory if got["error"] == "memory" else "pypdf"
    raise WorkbenchError(
        "E_TOO_LARGE",
        f"{raw!r}: the PDF is over an extraction limit: "
        f"{got['message']}" + (f" ({memory:,} bytes)" if limit == memory else ""),
        path=raw,
        limit=limit,
    )


def _decode(data: bytes, raw: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", f"{raw!r} is not UTF-8 text (byte {exc.start})", path=raw
        ) from None


class Extract:
    """The one method of ctx.extract."""

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.files = Files(session)

    def extract(self, path: str, options: dict | None = None) -> dict[str, Any]:
        if options is not None and not isinstance(options, dict):
            raise WorkbenchError("E_INVALID_ARGUMENT", "extract options must be an object", path=path)
        max_chars = (options or {}).get("maxChars")
        if max_chars is not None and (
            not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0
        ):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", "options.maxChars must be a non-negative integer", path=path
            )
        p = resolve(self.s, path)
        e = self.files.existing_file(p)
        name = p.rel.rsplit("/", 1)[-1]
        ext = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        mime = TYPES.get(ext)
        if mime is None:
            raise WorkbenchError(
                "E_UNSUPPORTED",
                f"ctx.extract cannot read {p.raw!r}: type "
                f"{ext or '(no extension)'!r} is not supported (supported: "
                f"{', '.join(sorted(TYPES))})",
                path=p.raw,
                type=ext or None,
            )
        data = self.files.read_checked(p, e)
        limit = self.s.limits.file_bytes  # as many characters as one read may give bytes
        # with maxChars the work stops there; otherwise past the limit is an error, not a cut
        over_is_error = max_chars is None or max_chars > limit
        cap: int = limit if max_chars is None or over_is_error else max_chars
        out: dict[str, Any] = {"mimeType": mime}
        if mime == "application/pdf":
            pages, cut = pdf_pages(data, p.raw, cap=cap, seconds=self.s.remaining("extract"))
            out["pages"] = pages
            text = "\n\n".join(pages)
        elif mime == "text/html":
            # the mail reader's linear converter: html.parser is quadratic on hostile markup
            text = html_to_text(_decode(data, p.raw), lambda: self.s.remaining("extract"))
        else:
            text = _decode(data, p.raw)
        if over_is_error and len(text) > limit:
            raise WorkbenchError(
                "E_TOO_LARGE",
                f"ctx.extract({p.raw!r}): the text is over "
                f"{limit:,} characters, the most one extract gives; pass "
                "options.maxChars to get its beginning",
                path=p.raw,
                limit=limit,
            )
        out["text"] = text[:cap]
        return out


#: ctx.extractor as a unit
SPEC = CapabilitySpec(impl="extractor", title="ctx.extractor", implementation=Extract)
