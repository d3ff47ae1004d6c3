"""Render each platform's ctx declarations from its capability registry.

One walk over `PROFILE.capabilities` gives both languages: a `.d.ts` (TypeScript, with JSDoc
from the rows' docs) and a `.py` of Protocol classes (a sync `Ctx` for `def handle`, an
`AsyncCtx` for `async def handle`). Types come from `_signatures` (checked against the
registry's names here), the agent built-ins' inputs from their schemas (ctx/tools.py), and the
rest from the profile's `Declarations`: the shapes its signatures name, its ctx's interface
name and a wrapper of the `.d.ts` (Ekanos: the `@ekanos/sdk` modules, lifted from sdk/*.ts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..ctx import SPECS
from ..platforms import KNOWN, names, profile
from ..platforms.base import Capability, Method, Profile
from . import _preamble as pre
from ._schema import to_py, to_ts
from ._signatures import BUILTIN_RESULTS, METHODS, NAMES, VALUES, Sig

HERE = Path(__file__).parent
GRANT_NOTES = {
    "email": 'Present only when `"email": {"read": true}` is in the manifest\'s top-level '
    "`permissions` and the tool's own (E1); else undefined.",
    "resources": "Present only when the manifest declares `resources` (R1); else undefined.",
}


class DriftError(Exception):
    """The registry has a method the signature table does not describe (or names it otherwise)."""


def sig(cap: Capability, m: Method) -> Sig:
    key = f"{cap.path}.{m.name}"
    if key not in METHODS and cap.impl not in SPECS:  # a plugin capability's: named, untyped
        params = m.params[1:] if cap.kind == "collection" else m.params
        return Sig(
            tuple(f"{p}: unknown" for p in params), "unknown", tuple(f"{p}: Any" for p in params), "Any"
        )
    if key not in METHODS:
        raise DriftError(f"{key}: a registry method with no signature in workbench/types/_signatures.py")
    s = METHODS[key]
    expected = m.params[1:] if cap.kind == "collection" else m.params
    names = tuple(p.split(":", 1)[0].rstrip("?").strip() for p in s.ts)
    if names != expected:
        raise DriftError(f"{key}: the registry's parameters are {expected}, _signatures says {names}")
    return s


def iname(path: str) -> str:
    """The interface name of a namespace: "storage.kv" -> "KV", "files" -> "Files"."""
    return NAMES.get(path) or path.rsplit(".", 1)[-1][:1].upper() + path.rsplit(".", 1)[-1][1:]


def _doc(text: str, indent: str) -> list[str]:
    return [f"{indent}/** {text} */"] if text else []


def _ts_method(name: str, s: Sig, indent: str = "  ", codec: str | None = None) -> list[str]:
    ret = s.ts_ret if codec == "void" else f"Promise<{s.ts_ret}>"  # void: fire and forget
    return [*_doc(s.doc, indent), f"{indent}{name}{s.ts_generic}({', '.join(s.ts)}): {ret};"]


def _tree(caps: Iterable[Capability]) -> dict[str, list[str]]:
    """{"storage": ["kv", "sql"]}: the intermediate objects of dotted namespace paths."""
    out: dict[str, list[str]] = {}
    for c in caps:
        if "." in c.path and c.kind != "value":
            head, tail = c.path.split(".", 1)
            out.setdefault(head, []).append(tail)
    return out


def _builtin_ts() -> list[str]:
    from ..ctx.tools import SCHEMAS

    lines = [
        "/** A built-in's failure: it resolves, it does not throw (A4). */",
        "export interface ErrorEnvelope {",
        "  error: string;",
        "  details?: Record<string, unknown>;",
        "}",
        "/** The built-in tools as `ctx.tools.<name>(input)` calls them (A3). */",
        "export interface BuiltinTools {",
    ]
    for name in sorted(SCHEMAS):
        lines.append(
            f"  {name}(input: {to_ts(SCHEMAS[name])}): Promise<{BUILTIN_RESULTS[name][0]} | ErrorEnvelope>;"
        )
    return [*lines, "}", "export type BuiltinName = keyof BuiltinTools;"]


def _source(prof: Profile) -> str:
    """Where the profile's rows are written, as the generated files' headers name it."""
    return prof.declarations.source or f"workbench/platforms/{prof.name}/__init__.py"


def render_ts(prof: Profile) -> str:
    """The `.d.ts` of one platform's ctx."""
    caps = prof.capabilities
    ctx_name = prof.declarations.ctx_type
    body: list[str] = [*prof.declarations.ts_shapes]
    agent = any(c.kind == "dispatch" for c in caps)
    if agent:
        body += _builtin_ts()
        body += [
            "/** `ctx.tools`: the enabled built-ins and the gem's own tools, by name (A3–A5). */",
            "export type Tools<Own = {}, Enabled extends BuiltinName = BuiltinName> = Pick<BuiltinTools, Enabled> & {",
            "  [K in keyof Own]: (input: Own[K]) => Promise<unknown>;",
            "};",
        ]
    for c in caps:
        if c.kind == "namespace":
            body += _doc(c.doc, "")
            body.append(f"export interface {iname(c.path)} {{")
            for m in c.methods:
                body += _ts_method(m.name, sig(c, m), codec=m.codec)
            body.append("}")
        elif c.kind == "collection":
            generic = "<Doc extends object = Record<string, unknown>>"
            body += _doc(c.doc, "")
            body += [
                f"export interface {iname(c.path)} {{",
                f"  collection{generic}(name: string): Collection<Doc>;",
                "}",
                f"/** One collection of `ctx.{c.path}.collection(name)`. */",
                f"export interface Collection{generic} {{",
            ]
            for m in c.methods:
                body += _ts_method(m.name, sig(c, m))
            body.append("}")
    for head, tails in _tree(caps).items():
        body.append(f"export interface {iname(head)} {{")
        body += [f"  readonly {t}: {iname(f'{head}.{t}')};" for t in tails]
        body.append("}")
    generic = "<Own = {}, Enabled extends BuiltinName = BuiltinName>" if agent else ""
    body += [f"/** The ctx of a tool ({prof.title}; {_source(prof).rsplit('/', 1)[0]}). */"]
    body.append(f"export interface {ctx_name}{generic} {{")
    seen: set[str] = set()
    for c in caps:
        note = ". ".join(x for x in (c.doc, GRANT_NOTES.get(c.grant or "", "")) if x)
        if c.kind == "value":
            body += _doc(note, "  ")
            body.append(f"  readonly {c.path}: {VALUES[c.path][0]};")
        elif c.kind == "function":
            m = c.methods[0]
            s = sig(c, m)
            body += _ts_method(c.path, Sig(s.ts, s.ts_ret, s.py, s.py_ret, note or s.doc, s.ts_generic))
        elif c.kind == "dispatch":
            body += _doc(note, "  ")
            body.append(f"  readonly {c.path}: Tools<Own, Enabled>;")
        elif c.top not in seen:
            seen.add(c.top)
            body += _doc(note if "." not in c.path else "", "  ")
            body.append(f"  readonly {c.top}: {iname(c.top)};")
    body.append("}")
    if ctx_name != "Ctx":
        body.append(f"export type Ctx = {ctx_name};")
    header = [
        f"// The ctx of {prof.title}, generated by `python -m workbench.types` from the capability",
        f"// registry ({_source(prof)}). Do not edit: regenerate.",
    ]
    if prof.declarations.ts_modules is not None:
        return "\n".join([*header, *prof.declarations.ts_modules(body)]) + "\n"
    return "\n".join([*header, *body]) + "\n"


# -- Python ------------------------------------------------------------------------------------


def _py_sig(params: tuple[str, ...]) -> str:
    return ", ".join(("self", *params))


def _py_ret(text: str) -> str:
    return re.sub(r"\blist\[", "builtins.list[", text)


def _py_method(name: str, s: Sig, asynchronous: bool, indent: str = "    ") -> list[str]:
    kw = "async def" if asynchronous else "def"
    params = [_py_ret(p) for p in s.py]
    lines = [f"{indent}{kw} {name}({_py_sig(tuple(params))}) -> {_py_ret(s.py_ret)}:"]
    if s.doc:
        lines.append(f'{indent}    """{s.doc}"""')
    lines.append(f"{indent}    ...")
    return lines


def _builtin_py(asynchronous: bool) -> list[str]:
    from ..ctx.tools import SCHEMAS

    prefix = "Async" if asynchronous else ""
    lines = [
        f"class {prefix}Tools(Protocol):",
        '    """ctx.tools: the enabled built-ins (A3); the gem\'s own tools by name too."""',
        "",
    ]
    for name in sorted(SCHEMAS):
        result = BUILTIN_RESULTS[name][1]
        s = Sig((), "", (f"input: {pre.builtin_input_name(name)}",), f"{result} | ErrorEnvelope")
        lines += _py_method(name, s, asynchronous)
        lines.append("")
    ret = "Awaitable[Any]" if asynchronous else "Any"
    lines += [
        f"    def __getattr__(self, name: str) -> Callable[[dict[str, Any]], {ret}]:",
        '        """The gem\'s own tools (a nested invocation, A3)."""',
        "        ...",
    ]
    return lines


def render_py(prof: Profile) -> str:
    """The Protocol classes of one platform's Python ctx (sync and async twins)."""
    from ..ctx.tools import SCHEMAS

    caps = prof.capabilities
    agent = any(c.kind == "dispatch" for c in caps)
    out = _py_header(prof)
    out += prof.declarations.py_shapes
    if agent:
        for name in sorted(SCHEMAS):
            out += pre.typed_dict(pre.builtin_input_name(name), SCHEMAS[name], to_py)
        out.append("")
    for asynchronous in (False, True):
        if agent:
            out += _builtin_py(asynchronous)
            out += ["", ""]
        out += _py_namespaces(caps, asynchronous)
        out += _py_ctx(prof, asynchronous)
    text = "\n".join(out).rstrip() + "\n"
    return text.replace("IMPORTS\n", "\n".join(_py_imports(text)) + "\n", 1)


def _py_header(prof: Profile) -> list[str]:
    """The module docstring (how to import the Ctx) and its imports (IMPORTS: those it uses)."""
    return [
        f'"""The ctx of {prof.title} for Python tools, as Protocol classes (editors and mypy).',
        "",
        f"Generated by `python -m workbench.types` from {_source(prof)}:",
        "do not edit. `Ctx` is what `def handle(input, ctx)` gets; `AsyncCtx` what `async def handle`",
        "gets (the same methods as coroutines). Import it for type checking only, so the tool runs",
        "where the workbench is not installed::",
        "",
        "    from __future__ import annotations",
        "    from typing import TYPE_CHECKING",
        "    if TYPE_CHECKING:",
        f"        from {prof.declarations.py_module or f'workbench.types.{prof.name}'} import Ctx",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import builtins",
        "IMPORTS",
        "",
    ]


def _py_namespaces(caps: Iterable[Capability], asynchronous: bool) -> list[str]:
    """A Protocol class per namespace and collection capability, and one per dotted head
    (ctx.a of ctx.a.b) holding its tails."""
    a = "Async" if asynchronous else ""
    out: list[str] = []
    for c in caps:
        if c.kind not in ("namespace", "collection"):
            continue
        cls = f"{a}{'Collection' if c.kind == 'collection' else iname(c.path)}"
        out += [f"class {cls}(Protocol):", f'    """ctx.{c.path}: {c.doc}"""', ""]
        for m in c.methods:
            out += _py_method(m.name, sig(c, m), asynchronous)
            out.append("")
        out.append("")
        if c.kind == "collection":
            out += [
                f"class {a}{iname(c.path)}(Protocol):",
                f'    """ctx.{c.path}: {c.doc}"""',
                "",
                f"    def collection(self, name: str) -> {cls}:",
                '        """D1: a collection the manifest declares (checked at once)."""',
                "        ...",
                "",
                "",
            ]
    for head, tails in _tree(caps).items():
        out += [f"class {a}{iname(head)}(Protocol):"]
        out += [f"    {t}: {a}{iname(f'{head}.{t}')}" for t in tails]
        out += ["", ""]
    return out


def _py_ctx(prof: Profile, asynchronous: bool) -> list[str]:
    """The Ctx (or AsyncCtx) class: a member per capability's top name."""
    a = "Async" if asynchronous else ""
    out = [
        f"class {a}Ctx(Protocol):",
        f'    """The ctx of a tool ({prof.title}) that is `{"async def" if a else "def"} handle`."""',
        "",
    ]
    seen: set[str] = set()
    for c in prof.capabilities:
        if c.kind == "value":
            out.append(f"    {c.path}: {VALUES[c.path][1]}")
            if c.python_alias:
                out.append(f"    {c.python_alias}: {VALUES[c.path][1]}")
        elif c.kind == "function":
            out += _py_method(c.path, sig(c, c.methods[0]), asynchronous)
        elif c.kind == "dispatch":
            out.append(f"    {c.path}: {a}Tools")
        elif c.top not in seen:
            seen.add(c.top)
            out.append(f"    {c.top}: {a}{iname(c.top)}")
    return [*out, "", ""]


def _py_imports(text: str) -> list[str]:
    """The import lines of the names of typing and collections.abc the module `text` uses."""
    used = lambda names: [n for n in names if re.search(rf"\b{n}\b", text)]  # noqa: E731
    imports = [
        f"from typing import {', '.join(used(('Any', 'Literal', 'NotRequired', 'Protocol', 'TypedDict', 'final')))}"
    ]
    if abc := used(("Awaitable", "Callable")):
        imports.insert(0, f"from collections.abc import {', '.join(abc)}")
    return imports


def render(name: str) -> dict[str, str]:
    """{file name: text} of one platform's declarations."""
    prof = profile(name)
    return {f"{name}.d.ts": render_ts(prof), f"{name}.py": render_py(prof)}


def ruff_format(text: str, path: Path) -> str:
    """`text` as `ruff format` leaves it (the project's style), or unchanged without ruff.

    The drift test compares Python declarations by their AST, so formatting never fails it."""
    import subprocess
    import sys

    try:
        out = subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return text
    return out.stdout if out.returncode == 0 else text


def shipped() -> list[str]:
    """The registry's platforms whose declarations ship in workbench/types (the built-ins; a
    plugin's are rendered when a gem's `.gem-workbench/` is made, or by `--out`)."""
    return [n for n in names() if n in KNOWN]


def write_all(folder: Path = HERE, platforms: Iterable[str] | None = None) -> list[Path]:
    """Write the declarations of `platforms` (default: `shipped()`) into `folder`; the paths
    written."""
    written = []
    for name in shipped() if platforms is None else platforms:
        for fname, text in render(name).items():
            if fname.endswith(".py"):
                text = ruff_format(text, folder / fname)
            (folder / fname).write_text(text, encoding="utf-8")
            written.append(folder / fname)
    return written
