"""Whether a SQL statement SQLite could not compile would have written the gem's storage (D4).

SQLite's authorizer sees a statement's writes while it compiles it; one that fails before
(`INSERT INTO no_such_table`, a syntax error after the table) is never seen. Such a statement
is read from its words at the top level instead: its first keyword, after comments and a WITH
clause, is a write (INSERT, REPLACE, UPDATE, DELETE, CREATE, DROP, ALTER, REINDEX, ANALYZE,
as the authorizer's write actions), and its target is not in `temp` (TEMP tables are scratch,
not storage). Only failed statements are read this way, so it costs nothing on success.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""\s+|--[^\n]*|/\*.*?(?:\*/|\Z)"""  # blanks and comments: skipped
    r"""|'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?"""  # literals, quoted names
    r"""|[A-Za-z_\x80-\U0010ffff][\w$\x80-\U0010ffff]*|.""",
    re.S,
)
_WRITES = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "REINDEX", "ANALYZE"}
)
_MAIN = frozenset({"SELECT", "VALUES", "INSERT", "REPLACE", "UPDATE", "DELETE"})  # after WITH
# words between a write's keyword and its target's name
_LEAD = frozenset(
    {"OR", "ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE", "INTO", "FROM", "TABLE", "VIEW", "INDEX",
     "TRIGGER", "UNIQUE", "VIRTUAL", "IF", "NOT", "EXISTS"}
)  # fmt: skip


def _top_level(sql: str, most: int = 32) -> list[str]:
    """The tokens outside parentheses, up to `most` of the statement after a WITH clause and
    up to its first parenthesis:
    words upper-cased, a quoted name unquoted and marked (never a keyword: "insert" is a
    name), punctuation as itself."""
    out: list[str] = []
    depth, start = 0, 0
    for m in _TOKEN.finditer(sql):
        t = m.group()
        if t[0].isspace() or t.startswith(("--", "/*")):
            continue
        if t == "(":
            if depth == 0 and out and (out[0] != "WITH" or start):
                break  # a statement's target is named before its first parenthesis
            depth += 1
        elif t == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            if t[0] in '"`[':
                out.append("\0" + t[1:-1])  # a quoted name: never a keyword
            else:
                out.append(t.upper() if t[0].isalpha() or t[0] == "_" else t)
            if out[0] == "WITH" and not start and out[-1] in _MAIN:
                start = len(out) - 1  # the statement the WITH clause is for
            if len(out) - start >= most and (out[0] != "WITH" or start):
                break
    return out


def writes_storage(sql: str) -> bool:
    """Whether the (failed) statement `sql` was a write of the gem's own tables (see above)."""
    words = _top_level(sql)
    if words[:1] == ["WITH"]:
        words = words[next((i for i, w in enumerate(words) if w in _MAIN), len(words)) :]
    if not words or words[0] not in _WRITES:
        return False
    if words[0] == "CREATE" and words[1:2] and words[1] in ("TEMP", "TEMPORARY"):
        return False
    rest = [w for w in words[1:] if w not in _LEAD]
    target_schema = rest[0] if len(rest) > 1 and rest[1] == "." else None
    return (target_schema or "").lstrip("\0").upper() != "TEMP"
