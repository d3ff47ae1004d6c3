"""Header values of outgoing mail (send_email), checked as the mail library will read them.

A value is checked twice before any message is built: as given, and after RFC 2047 decoding —
both the decoding the `email` package applies when the value is set on a message (its header
parser decodes encoded words, even inside a word: `a=?utf-8?q?b=0Ac?=d` is "ab\\ncd") and
`email.header.decode_header`'s, which any reader of the message may apply — and each decoded
form decoded again while that changes it, since a word may hold another. None may hold a
character that ends a line for some reader (LINE_BREAKS: CR, LF, NUL and every other character
`str.splitlines` splits on — VT, FF, FS, GS, RS, NEL, U+2028, U+2029) or another control
character. `POLICY` writes the message and refuses, at generation, any header whose folded form
has a line break not followed by folding white space, or a line of white space only (what
`verify_generated_headers` does in newer Pythons, which this one may lack).
"""

from __future__ import annotations

import email.policy
import re
from typing import Any

from .mailheaders import decode_words

#: characters some reader of a message takes for the end of a line (str.splitlines's, and NUL)
LINE_BREAKS = "\r\n\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{re.escape(LINE_BREAKS)}]")
_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1b\x1f\x7f-\x9f]")  # the other C0 and C1 controls; tab is allowed
# a line break the folding did not make (not followed by a space or tab), or a blank line
_UNFOLDED = re.compile(r"\r\n[^ \t]|\r[^ \n\t]|\n[^ \t]|(?:\r\n|\r(?!\n)|\n)[ \t]*(?:\r|\n|$)")


class HeaderInjection(ValueError):
    """A generated header would break its line: `name` is the header's name."""

    def __init__(self, name: str, folded: str) -> None:
        super().__init__(f"the {name} header would break its line when written: {folded[:200]!r}")
        self.name = name


class _VerifyingPolicy(email.policy.EmailPolicy):
    """email.policy.SMTP that checks every header it folds (for SMTP: CRLF line ends)."""

    def fold(self, name: str, value: Any) -> str:
        return _verified(name, super().fold(name, value), self.linesep)

    def fold_binary(self, name: str, value: Any) -> bytes:
        folded = super().fold_binary(name, value)
        _verified(name, folded.decode("ascii", "surrogateescape"), self.linesep)
        return folded


def _verified(name: str, folded: str, linesep: str) -> str:
    body = folded[: -len(linesep)] if folded.endswith(linesep) else folded
    if _UNFOLDED.search(body) or "\x00" in body:
        raise HeaderInjection(name, folded)
    return folded


def _policy() -> email.policy.EmailPolicy:
    strict: dict[str, Any] = {"linesep": "\r\n"}
    if hasattr(email.policy.SMTP, "verify_generated_headers"):  # Python 3.13, 3.12.5, 3.11.10
        strict["verify_generated_headers"] = True
    return _VerifyingPolicy(**strict)


#: how send_email's messages are written (the library's own check too where it has one)
POLICY = _policy()


#: rounds of decoding a value is followed through: an encoded word whose text is another word
NESTING = 8


def _decoded_once(name: str, value: str) -> list[str]:
    """`value` as the email package parses it when it is set (RFC 2047 words decoded) and as
    email.header decodes it. A parse that fails on a decoded line break counts as one."""
    seen = [decode_words(value)]
    try:
        seen.append(str(POLICY.header_factory(name, value)))
    except Exception as exc:  # Address() refuses a CR or LF the parser decoded into an address
        seen.append("\r\n" if "CR or LF" in str(exc) else "")  # other failures: building says so
    return seen


def _forms(name: str, value: str) -> tuple[list[str], bool]:
    """Every form of `value` a reader may see, and whether decoding still changed it after
    NESTING rounds. The writer puts the once-decoded text on the wire as it is, so a word whose
    text is itself a word (`=?utf-8?b?PT91dGYtOD9xPz0wRD0wQT89?=`, the Q word `=0D=0A` in B)
    goes out as that inner word, and the reader decodes it to a line break."""
    seen, todo = [value], [value]
    for _ in range(NESTING):
        todo = [d for text in todo for d in _decoded_once(name, text) if d not in seen]
        todo = list(dict.fromkeys(todo))
        seen += todo
        if not todo:
            return seen, False
    return seen, True


def decodings(name: str, value: str) -> list[str]:
    """`value` as readers of header `name` may see it: as given, and each decoding of it, again
    and again while a decoding changes it (at most NESTING rounds)."""
    return _forms(name, value)[0]


def problem(name: str, value: str) -> tuple[str, str | None] | None:
    """What is wrong with `value` as the value of header `name`: (what, reason), or None.
    reason is "header_injection" for a line break, in the value or once it is decoded."""
    forms, deeper = _forms(name, value)
    for i, text in enumerate(forms):
        where = "" if i == 0 else " once its RFC 2047 encoded words are decoded"
        found = _BREAK.search(text)
        if found:
            return f"contains a line break ({found.group()!r}){where}: a header injection", "header_injection"
        found = _CONTROL.search(text)
        if found:
            return f"contains a control character ({found.group()!r}){where}", None
    if deeper:
        return f"holds RFC 2047 encoded words nested over {NESTING} deep", None
    return None
