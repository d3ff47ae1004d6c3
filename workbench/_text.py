"""Text the workbench is handed by someone else. Linear-time patterns: a gem's or a fixture's
regular expression is compiled with RE2 (PyPI google-re2), never Python's backtracking `re`,
within a memory budget (re2_compile). Strings that UTF-8 cannot hold: JavaScript strings (and JSON's "\\ud800") may carry lone
UTF-16 surrogates, and os.fsdecode gives them for names that are not UTF-8 on disk. Neutral
ground: the ctx layer, the providers and the gem loader all ask the same two questions."""

from __future__ import annotations

import re
from typing import Any


def is_unicode(s: str) -> bool:
    """Whether `s` holds no lone surrogate (so UTF-8 can hold it)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def well_formed(s: str) -> str:
    """`s` as the platform stores it: like `TextEncoder`, surrogate pairs joined and each lone
    surrogate replaced by U+FFFD."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def well_formed_params(params: Any) -> Any:
    """SQL parameters (a list or a dict) with every string made well-formed."""
    if isinstance(params, dict):
        return {k: well_formed(v) if isinstance(v, str) else v for k, v in params.items()}
    return [well_formed(v) if isinstance(v, str) else v for v in params]


def well_formed_value(v: Any) -> Any:
    """A JSON value with every string (and key) well_formed: for what the workbench shows."""
    if isinstance(v, str):
        return well_formed(v)
    if isinstance(v, list):
        return [well_formed_value(x) for x in v]
    if isinstance(v, dict):
        return {well_formed(k): well_formed_value(x) for k, x in v.items()}
    return v


# What a terminal, a pytest report or a notebook would act on rather than show, in text a tool
# controls (its error, its output, its log rows): colour and cursor codes (CSI, ESC [ …) are
# dropped; every other escape (OSC 8 hyperlinks, OSC 52 clipboard writes), C0 and C1 controls
# and bidi overrides are shown as visible characters, so they can be read but do nothing.
_CSI = "\x1b\\[[0-?]*[ -/]*[@-~]"
_UNSAFE = re.compile(
    f"{_CSI}|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|\r(?!\n)"
)


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    if len(c) > 1:
        return ""  # a colour or cursor code
    n = ord(c)
    if n < 0x20:
        return chr(0x2400 + n)  # U+241B ␛ for ESC, ␍ for a lone CR, …: Unicode's control pictures
    return "\u2421" if n == 0x7F else f"\\u{n:04x}"  # JSON-safe: ␡, \u009b, \u202e


def terminal_safe(text: str) -> str:
    """`text` as it may reach a terminal, a report or a display: well-formed, its colour codes
    dropped, every other control character, escape and bidi override shown visibly (ESC as
    ␛, C1 and bidi as `\\u009b`, `\\u202e`); newlines and tabs kept."""
    text = well_formed(text)
    return _UNSAFE.sub(_visible, text) if _UNSAFE.search(text) else text


REGEX_MAX_MEM = 1 << 20  # RE2's budget for one compiled pattern (it refuses larger ones)


def re2_compile(body: str, *, case_sensitive: bool = True) -> Any:
    """`body` compiled with RE2 (linear-time matching, REGEX_MAX_MEM at most); ValueError with
    RE2's reason when it refuses it (backreferences, lookaround, too big)."""
    import re2

    options = re2.Options()
    options.max_mem = REGEX_MAX_MEM
    options.log_errors = False
    options.never_capture = True
    options.case_sensitive = case_sensitive
    try:
        return re2.compile(body, options)
    except re2.error as exc:
        reason = (
            exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        )
        raise ValueError(f"RE2 refuses the pattern: {reason}") from None
