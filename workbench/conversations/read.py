"""A recorded conversation read into one list of tool calls, whatever wrote it.

Three transcript formats, as each provider documents its messages:

- OpenAI Chat Completions: an assistant message's `tool_calls` (`id`, `function.name`,
  `function.arguments` as JSON text), answered by `{"role": "tool", "tool_call_id", "content"}`;
- OpenAI Responses: `{"type": "function_call", "call_id", "name", "arguments"}` items, answered
  by `{"type": "function_call_output", "call_id", "output"}`;
- Anthropic Messages: `{"type": "tool_use", "id", "name", "input"}` blocks of an assistant's
  content, answered by a user's `{"type": "tool_result", "tool_use_id", "content", "is_error"}`;

and the case `--save` writes (conversations/case.py). A transcript is someone else's data: it
is read within CONVERSATION_BYTES, the JSON depth bound and MAX_CALLS, and every field the
replay uses is checked for its type; what is wrong is E_CONVERSATION naming where it is
(`messages[3].tool_calls[0].function.arguments`), never a traceback.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import GemLoadError, WorkbenchError
from .._json import MAX_JSON_DEPTH, deeper_than, json_chars, load_file_json, why_not_json

__all__ = [
    "CONVERSATION_BYTES",
    "FORMATS",
    "MAX_CALLS",
    "MAX_NAME_CHARS",
    "Conversation",
    "Recorded",
    "RecordedCall",
    "read_conversation",
]

# A transcript is a chat's text: no model's context window holds more than a few MiB of it, so
# a bigger file is not a conversation (and a saved case is one file a repository keeps).
CONVERSATION_BYTES = 8 * 1024 * 1024
MAX_CALLS = 1_000  # tool calls replayed from one conversation: each is a real call on the bench
MAX_NAME_CHARS = 256  # of a tool's name or a call's id (the providers' are 64 and about 40)

#: The formats read, with what each looks like (said when a transcript is none of them).
FORMATS = {
    "openai-chat": 'OpenAI Chat Completions messages (an assistant\'s "tool_calls", answered by '
    '{"role": "tool", "tool_call_id", "content"})',
    "openai-responses": 'OpenAI Responses items ({"type": "function_call", "call_id", "name", '
    '"arguments"} and {"type": "function_call_output", "call_id", "output"})',
    "anthropic": 'Anthropic Messages ({"type": "tool_use", "id", "name", "input"} blocks answered '
    'by {"type": "tool_result", "tool_use_id", "content", "is_error"})',
}
CASE = "case"  # the format of a case `--save` wrote
_TEXT_BLOCKS = ("text", "input_text", "output_text")  # content parts that are text, by format


@dataclass(frozen=True)
class Recorded:
    """A call's recorded result: `content` is its text, a list of content blocks (not all of
    them text: an image), or a JSON value; `is_error`: the transcript marked it an error."""

    content: Any
    is_error: bool = False


@dataclass(frozen=True)
class RecordedCall:
    """One tool call of a conversation, in order (`n` from 1): its id, the tool's name as the
    model saw it, its arguments (parsed), where it is in the transcript, and its result (None:
    the transcript has no answer to it)."""

    n: int
    call_id: str
    name: str
    arguments: Any
    where: str
    result: Recorded | None = None


@dataclass
class Conversation:
    """A transcript's tool calls; `gem`, `options` and `names`: a saved case's (else None, {})."""

    format: str
    calls: list[RecordedCall]
    label: str
    gem: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # the model's names of the gem's tools


class _Reader:
    """Reads one transcript; `bad` makes its E_CONVERSATION errors, named by its label."""

    def __init__(self, label: str, depth: int, max_calls: int) -> None:
        self.label = label
        self.depth = depth
        self.max_calls = max_calls
        self.calls: list[RecordedCall] = []
        self.results: list[tuple[str, Recorded, str]] = []  # (call id, result, where)

    def bad(self, where: str, why: str, **details: Any) -> WorkbenchError:
        return WorkbenchError("E_CONVERSATION", f"{self.label}: {where} {why}", field=where, **details)

    def text(self, obj: dict[str, Any], key: str, at: str) -> str:
        """obj[key]: a name or an id, a string of 1 to MAX_NAME_CHARS characters."""
        v = obj.get(key)
        if not isinstance(v, str) or not v:
            raise self.bad(f"{at}.{key}", f"is {_kind(v)}, not a non-empty string")
        if len(v) > MAX_NAME_CHARS:
            raise self.bad(
                f"{at}.{key}", f"is {len(v):,} characters: at most {MAX_NAME_CHARS:,}", limit=MAX_NAME_CHARS
            )
        return v

    def obj(self, v: Any, at: str, what: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.bad(at, f"is {_kind(v)}, not {what}")
        return v

    def arguments(self, text: Any, at: str) -> Any:
        """The model's arguments, JSON text: parsed within the depth bound."""
        if not isinstance(text, str):
            raise self.bad(at, f"is {_kind(text)}, not the arguments' JSON text")
        if not text.strip():  # a call of a tool without parameters, as some models write it
            return {}
        try:
            value = json.loads(text)
            too_deep = _deep(value, self.depth)
        except RecursionError:  # the parser's own guard, near 1,000 levels
            too_deep = True
        except ValueError as exc:
            raise self.bad(
                at, f"is not JSON ({exc}): a call is replayed with the arguments it was sent"
            ) from None
        if too_deep:
            raise self.bad(at, f"nests deeper than {self.depth} levels", limit=self.depth)
        return value

    def content(self, v: Any, at: str) -> Any:
        """A result's content: its text, the text of its text blocks, or the blocks."""
        if v is None:
            return ""
        if isinstance(v, str):
            return v
        if not isinstance(v, list):
            raise self.bad(at, f"is {_kind(v)}, not a text or a list of content blocks")
        for i, b in enumerate(v):
            self.obj(b, f"{at}[{i}]", "a content block (an object with a type)")
        if all(b.get("type") in _TEXT_BLOCKS and isinstance(b.get("text"), str) for b in v):
            return "\n".join(b["text"] for b in v)
        return v

    def call(self, call_id: str, name: str, arguments: Any, at: str) -> None:
        if len(self.calls) >= self.max_calls:
            raise self.bad(at, f"is a tool call past the {self.max_calls:,} replayed", limit=self.max_calls)
        self.calls.append(RecordedCall(len(self.calls) + 1, call_id, name, arguments, at))

    def answered(self) -> list[RecordedCall]:
        """The calls, each with its result; an answer to no call, or a second, is an error."""
        index: dict[str, int] = {}
        for i, c in enumerate(self.calls):
            if c.call_id in index:
                first = self.calls[index[c.call_id]].where
                raise self.bad(c.where, f"has the call id {c.call_id!r} of {first} too")
            index[c.call_id] = i
        done: dict[str, str] = {}
        calls = list(self.calls)
        for call_id, result, at in self.results:
            if call_id not in index:
                raise self.bad(at, f"answers call {call_id!r}, which no tool call of the conversation made")
            if call_id in done:
                raise self.bad(at, f"answers call {call_id!r} again (first at {done[call_id]})")
            done[call_id] = at
            i = index[call_id]
            c = calls[i]
            calls[i] = RecordedCall(c.n, c.call_id, c.name, c.arguments, c.where, result)
        return calls


def _kind(v: Any) -> str:
    """What a value is, in JSON's words."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "an empty string" if not v else "a string"
    return "a list" if isinstance(v, list) else "an object" if isinstance(v, dict) else type(v).__name__


def _deep(value: Any, depth: int) -> bool:
    return isinstance(value, (list, dict)) and deeper_than(value, depth)


# -- the formats -----------------------------------------------------------------------------
def _chat(r: _Reader, items: list[Any], prefix: str) -> None:
    for i, m in enumerate(items):
        at = f"{prefix}[{i}]"
        m = r.obj(m, at, "a message object")
        calls = m.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise r.bad(f"{at}.tool_calls", f"is {_kind(calls)}, not a list")
            for j, tc in enumerate(calls):
                where = f"{at}.tool_calls[{j}]"
                tc = r.obj(tc, where, "a tool call object")
                if tc.get("type", "function") != "function":
                    raise r.bad(
                        f"{where}.type", f"is {tc.get('type')!r}: only function tool calls are replayed"
                    )
                fn = r.obj(tc.get("function"), f"{where}.function", "an object with name and arguments")
                name = r.text(fn, "name", f"{where}.function")
                args = r.arguments(fn.get("arguments"), f"{where}.function.arguments")
                r.call(r.text(tc, "id", where), name, args, where)
        if m.get("role") == "tool":
            r.results.append(
                (r.text(m, "tool_call_id", at), Recorded(r.content(m.get("content"), f"{at}.content")), at)
            )


def _responses(r: _Reader, items: list[Any], prefix: str) -> None:
    for i, it in enumerate(items):
        at = f"{prefix}[{i}]"
        it = r.obj(it, at, "an item object")
        kind = it.get("type")
        if kind == "function_call":
            args = r.arguments(it.get("arguments"), f"{at}.arguments")
            r.call(r.text(it, "call_id", at), r.text(it, "name", at), args, at)
        elif kind == "function_call_output":
            content = r.content(it.get("output"), f"{at}.output")
            r.results.append((r.text(it, "call_id", at), Recorded(content), at))


def _anthropic(r: _Reader, items: list[Any], prefix: str) -> None:
    for i, m in enumerate(items):
        at = f"{prefix}[{i}]"
        content = r.obj(m, at, "a message object").get("content")
        if content is None or isinstance(content, str):
            continue  # a message of text only
        if not isinstance(content, list):
            raise r.bad(f"{at}.content", f"is {_kind(content)}, not a text or a list of content blocks")
        for j, b in enumerate(content):
            where = f"{at}.content[{j}]"
            b = r.obj(b, where, "a content block (an object with a type)")
            if b.get("type") == "tool_use":
                args = b.get("input", {})
                if not isinstance(args, dict):
                    raise r.bad(f"{where}.input", f"is {_kind(args)}, not an object of arguments")
                r.call(r.text(b, "id", where), r.text(b, "name", where), args, where)
            elif b.get("type") == "tool_result":
                is_error = b.get("is_error", False)
                if not isinstance(is_error, bool):
                    raise r.bad(f"{where}.is_error", f"is {_kind(is_error)}, not a boolean")
                result = Recorded(r.content(b.get("content"), f"{where}.content"), is_error)
                r.results.append((r.text(b, "tool_use_id", where), result, where))


_PARSERS = {"openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic}


def _format_of(item: Any) -> str | None:
    """The format a message or item is written in, when it says (one with tool calls)."""
    if not isinstance(item, dict):
        return None
    if item.get("type") in ("function_call", "function_call_output"):
        return "openai-responses"
    if "tool_calls" in item or item.get("role") == "tool":
        return "openai-chat"
    content = item.get("content")
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
    ):
        return "anthropic"
    return None


def _detect(r: _Reader, parts: list[tuple[str, list[Any]]]) -> str:
    found: dict[str, str] = {}
    for prefix, items in parts:
        for i, item in enumerate(items):
            kind = _format_of(item)
            if kind is not None:
                found.setdefault(kind, f"{prefix}[{i}]")
    if len(found) > 1:
        shown = " and ".join(f"{k} (at {at})" for k, at in found.items())
        raise r.bad("conversation", f"mixes formats: {shown}")
    if not found:
        expected = "; ".join(FORMATS.values())
        raise r.bad("conversation", f"has no tool calls. Expected one of: {expected}")
    return next(iter(found))


# -- the source ------------------------------------------------------------------------------
def _load(source: Any, limit: int, depth: int) -> tuple[Any, str]:
    """(the transcript's JSON value, its label): a path, a JSON text (str or bytes), or a list
    or dict already parsed; E_CONVERSATION when it is over `limit` bytes or `depth` levels."""

    def bad(label: str, why: str, **details: Any) -> WorkbenchError:
        return WorkbenchError("E_CONVERSATION", f"{label} {why}", field="conversation", **details)

    label = "the conversation"
    if isinstance(source, str) and source.lstrip()[:1] in ("[", "{"):
        if len(source) > limit:  # (characters: each is a byte at least)
            raise bad(label, f"is over {limit:,} bytes", limit=limit)
        source = source.encode("utf-8", "surrogatepass")
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser()
        label = str(source)
        try:
            from ..gem.folder import read_file

            source = read_file(path, limit)
        except GemLoadError as exc:
            raise bad(label, f"cannot be read: {exc.message}", **exc.details) from None
    if isinstance(source, (bytes, bytearray)):
        if len(source) > limit:
            raise bad(label, f"is over {limit:,} bytes", limit=limit)
        value, why = load_file_json(bytes(source), depth=depth, constants=False)
        if why is not None:
            raise bad(label, why, limit=depth) if "deeper" in why else bad(label, why)
        return value, label
    if not isinstance(source, (list, dict)):
        raise bad(
            label,
            f"is {type(source).__name__}: give a path, a JSON text, a list of messages or items, "
            'or a dict with "messages", "input" or "output"',
        )
    why = why_not_json(source, "conversation", max_depth=depth)
    if why is not None:
        raise bad(label, f"is not a transcript: {why}", **({"limit": depth} if "deeper" in why else {}))
    if json_chars(source) > limit:
        raise bad(label, f"is over {limit:,} characters as JSON", limit=limit)
    return source, label


def _parts(r: _Reader, value: Any) -> list[tuple[str, list[Any]]]:
    """The lists of messages or items the transcript holds, each with its name."""
    if isinstance(value, list):
        return [("messages", value)]
    keys = [k for k in ("messages", "input", "output") if k in value]
    if not keys:
        raise r.bad(
            "conversation",
            f"is an object with {', '.join(map(repr, list(value)[:8])) or 'no keys'}: expected a list of "
            'messages or items, or an object with "messages", "input" or "output"',
        )
    out = []
    for k in keys:
        if isinstance(value[k], str) and k == "input":
            continue  # a Responses request's input given as one text: no tool calls in it
        if not isinstance(value[k], list):
            raise r.bad(k, f"is {_kind(value[k])}, not a list")
        out.append((k, value[k]))
    return out


def _saved(r: _Reader, value: dict[str, Any]) -> Conversation:
    """A case `--save` wrote: the calls, their results, its gem and open options."""
    if value.get("conversation") != 1:
        raise r.bad("conversation", f"is case format {value.get('conversation')!r}: this workbench reads 1")
    gem = r.text(value, "gem", "case")
    options = r.obj(value.get("options", {}), "options", "an object")
    calls = value.get("calls")
    if not isinstance(calls, list) or not calls:
        raise r.bad("calls", f"is {_kind(calls) if calls != [] else 'an empty list'}, not a list of calls")
    for i, c in enumerate(calls):
        at = f"calls[{i}]"
        c = r.obj(c, at, "a call object")
        r.call(r.text(c, "call_id", at), r.text(c, "tool", at), c.get("arguments", {}), at)
        result = c.get("result")
        if result is not None:
            result = r.obj(result, f"{at}.result", "an object with content and is_error")
            is_error = result.get("is_error", False)
            if not isinstance(is_error, bool):
                raise r.bad(f"{at}.result.is_error", f"is {_kind(is_error)}, not a boolean")
            r.results.append((c["call_id"], Recorded(result.get("content"), is_error), at))
    names = r.obj(value.get("names", {}), "names", "an object of names")
    for seen, tool in names.items():
        if not isinstance(tool, str) or not tool or len(seen) > MAX_NAME_CHARS or len(tool) > MAX_NAME_CHARS:
            raise r.bad(
                f"names.{seen[:60]}", f"is {_kind(tool)}: give the gem's tool name the model saw as it"
            )
    kept = value.get("format")
    return Conversation(kept if kept in FORMATS else CASE, r.answered(), r.label, gem, options, names)


def read_conversation(
    source: Any, *, limit: int = CONVERSATION_BYTES, depth: int = MAX_JSON_DEPTH, max_calls: int = MAX_CALLS
) -> Conversation:
    """The tool calls of a recorded conversation, in order, each with its recorded result.

    `source`: a path, a JSON text, a list of messages (or Responses items), or a dict with
    "messages", "input" and/or "output" (a request or a response), or a saved case. Bounded
    by `limit` bytes, `depth` levels of JSON and `max_calls` calls: E_CONVERSATION naming
    the field (or the limit) when it is over one, not a transcript, or a field is wrong."""
    if isinstance(source, Conversation):  # read already (the command line reads it first)
        return source
    value, label = _load(source, limit, depth)
    r = _Reader(label, depth, max_calls)
    if isinstance(value, dict) and "conversation" in value and "calls" in value:
        return _saved(r, value)
    if not isinstance(value, (list, dict)):
        raise r.bad("conversation", f"is {_kind(value)}: expected a list of messages or items, or an object")
    parts = _parts(r, value)
    kind = _detect(r, parts)
    for prefix, items in parts:
        _PARSERS[kind](r, items, prefix)
    return Conversation(kind, r.answered(), label)
