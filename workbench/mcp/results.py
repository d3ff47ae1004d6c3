"""A CallResult as an MCP tool result (the `tools/call` answer, JSON): structured content plus
text. A workbench error (E_SCHEMA, E_TIMEOUT, E_INTERRUPTED, …) or a tool's error is an
`isError` result carrying the code, the message and the details; so is an expected failure the
tool returned (Ekanos' `{error}`, K2), which the model explains. What the model is given of a
value and what only the user is shown follows the platform (`Profile.model_view`: agent tools'
`_llm` / `_render` / `_interactive`); the user's part goes in `_meta`, never in the content."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ..bench.result import CallResult
    from ..platforms import Profile

#: `_meta` keys of a result (reverse-DNS prefixed, as MCP asks of an implementation's own keys)
META = "dev.gem-workbench/"
_LONE = re.compile("[\ud800-\udfff]")
DETAILS_CHARS = 64 * 1024  # of an error's details as JSON; longer: cut, and said so


def tool_result(res: CallResult, profile: Profile) -> dict[str, Any]:
    """The `CallToolResult` of one call, as JSON (camelCase keys, as on the wire); a lone
    surrogate in it (which JS strings hold and UTF-8 cannot) as U+FFFD, said in `_meta`."""
    out = _result(res, profile)
    text = json.dumps(out, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        out = json.loads(_LONE.sub("\ufffd", text))
        out["_meta"][f"{META}replaced"] = (
            "lone surrogates (UTF-16 halves) as U+FFFD; bench.calls() has the value"
        )
    return out


def _result(res: CallResult, profile: Profile) -> dict[str, Any]:
    meta: dict[str, Any] = {f"{META}call_id": res.call_id}
    notes = [*res.violations, *res.warnings]
    if notes:  # D4's violations, outputExample's shape warnings: what the result display shows
        meta[f"{META}warnings"] = notes
    if res.error is not None:
        return {**error_result(res.error), "_meta": meta}
    if res.expected_failure:  # K2: `{error}` returned on purpose, for the model to explain
        return {
            "content": [_text(res.value)],
            "structuredContent": _structured(res.value),
            "isError": True,
            "_meta": {**meta, f"{META}outcome": "expected_failure"},
        }
    model, user = profile.model_view(res.value) if profile.model_view is not None else (res.value, {})
    if user:
        meta[f"{META}user"] = user  # shown to the user by the platform, never sent to the model
    if res.surfaced:  # surface_file: the platform shows these files to the user
        meta[f"{META}surfaced"] = [
            {k: str(v) for k, v in f.items() if k in ("path", "file", "mime", "size", "title")}
            for f in res.surfaced
        ]
    # isError stated, as the SDK's model dumped it: a client may read it without a default
    return {
        "content": [_text(model)],
        "structuredContent": _structured(model),
        "isError": False,
        "_meta": meta,
    }


def error_result(err: WorkbenchError) -> dict[str, Any]:
    """An `isError` result for a coded error: `{error: {code, message, details}}` and its text."""
    details = _json_safe(err.details)
    text = json.dumps(details, ensure_ascii=False)
    if len(text) > DETAILS_CHARS:
        details = {"truncated": f"the details were {len(text):,} characters of JSON; see bench.calls()"}
    body = {"code": err.code, "message": err.message, "details": details}
    return {
        "content": [{"type": "text", "text": f"{err.code}: {err.message}"}],
        "structuredContent": {"error": body},
        "isError": True,
    }


def _structured(value: Any) -> dict[str, Any]:
    """MCP's structured content is an object: a value that is not one goes under "result"."""
    return value if isinstance(value, dict) else {"result": value}


def _text(value: Any) -> dict[str, Any]:
    """The value as the text the model reads: a string as it is, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {"type": "text", "text": text}


def _json_safe(value: Any) -> Any:
    """Details as plain JSON (a path or a tuple among them made text or a list)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))
