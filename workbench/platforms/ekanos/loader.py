"""Loading an Ekanos integration (K1–K5): its module is run to be described.

An integration is code, not a manifest: `integration.ts` default-exports
`defineIntegration({slug, egress, storage, tools})`, and the SDK's own checks run when the
module is imported. So loading runs the module once, in a Deno Worker that may read only the
integration's folder and the SDK (as its tools do in the sandbox), bounded in time and output
(`describe.ts`); the SDK's `describeIntegration` answers with the definition as JSON, which is
checked again here (it is the integration's to forge) and made the gem model. Every problem
points where the seed's troubleshooting says: `tools.<index>.<field>`.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

from ..._deno import ProbeError, probe
from ..._errors import GemLoadError, GemWarning
from ..._json import deeper_than
from ...gem.folder import clip, open_regular, realpath
from ...gem.links import GemLinks
from ...gem.lint import link_problems
from ...gem.model import LANGUAGES, Manifest, ToolSpec
from ...gem.names import slug_problem
from ...gem.near import close_key
from ...gem.rules import SchemaRules
from ...gem.schema import check_input_schema
from ...providers.hostnames import NUMBERISH, address_problem, ipv4_reading, name_problem
from .storage import MAX_KEY_CHARS, STORAGE_RULES

HERE = Path(__file__).resolve().parent
SDK = HERE / "sdk"
IMPORT_MAP = SDK / "import_map.json"
ENTRIES = ("integration.ts", "integration.js")
MAX_DEPTH = 64
MAX_TOOLS = 200  # as the SDK's LIMITS
NAME = re.compile(r"[a-z][a-z0-9_]*")

#: K3: only these four at the root of `parameters`; inside, anything JSON Schema allows ("you are
#: unconstrained"): `pattern` is checked with RE2. `patternProperties` and `uniqueItems` are
#: refused at load: the workbench cannot yet check them in bounded time (README, Ekanos).
RULES = SchemaRules(
    unsupported_keywords=("patternProperties", "uniqueItems"),
    null_is_absent=False,
    root_keys=("type", "properties", "required", "additionalProperties"),
    re2_patterns=True,
    schema_key="parameters",
)


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
# at least two labels after a wildcard: `*.example` would open a whole top-level domain
_ENTRY = re.compile(rf"\*\.{_LABEL}\.{_LABEL}(?:\.{_LABEL})*|{_LABEL}(?:\.{_LABEL})*")


def egress_entry_problem(entry: object) -> str | None:
    """Why `entry` is not an egress host (`api.acme.example`, `*.acme.example`), or None; the
    SDK's egressEntryProblem, checked again here (the description is the integration's). An
    entry a resolver reads as an address (`127.0.0.0x1`, `0x7f.1`) or a name of this machine
    (`localhost`, `*.localhost`) is refused; sdk/egress_cases.json pins both sides."""
    if not isinstance(entry, str):
        return f"must be a host name string, got {type(entry).__name__}"
    if len(entry) > 253 or not _ENTRY.fullmatch(entry):
        return f"{entry[:100]!r} is not a host name: lower-case letters, digits, hyphens and dots, or '*.domain.tld'"
    name = entry[2:] if entry.startswith("*.") else entry
    if NUMBERISH.fullmatch(name.rsplit(".", 1)[-1]):  # 127.0.0.0x1, 0x7f.1: read as an address
        try:
            addr = ipv4_reading(name)
        except ValueError:
            return f"{entry!r} ends in a number: a URL parser refuses it as a host, egress takes host names"
        why = address_problem(addr) if addr is not None else None
        return f"{entry!r} is the IP address {addr}{f', {why}' if why else ''}; egress takes host names"
    why = name_problem(name)
    if why:
        return f"{entry!r} is {why} (localhost, *.localhost, *.local, *.internal, …); egress takes public host names"
    return None


def entry(root: Path) -> Path:
    """The integration's module: integration.ts, else integration.js."""
    for name in ENTRIES:
        if os.path.lexists(root / name):
            return root / name
    manifest = os.path.lexists(root / "manifest.json")
    raise GemLoadError(
        f"{root}: an Ekanos integration is defined by integration.ts (or .js) default-exporting "
        "defineIntegration({ slug, egress, tools }) from '@ekanos/sdk'"
        + ("; it has no manifest.json (remove its `platform`, or write integration.ts)" if manifest else ""),
        file=str(root / ("manifest.json" if manifest else "integration.ts")),
        pointer="/platform" if manifest else "",
    )


def deno_dir() -> Path:
    """The Deno cache of describe runs (transpiled TypeScript, shared by every integration)."""
    base = os.environ.get("GEM_WORKBENCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gem-workbench"
    )
    return Path(base) / "deno-describe"


def describe(root: Path) -> dict[str, Any]:
    """Run the integration's module and return its description; GemLoadError when it cannot
    be loaded (it throws, has no default export, or exports something not from
    defineIntegration), pointing at the field the SDK's check named."""
    module = entry(root)
    real, inside = realpath(module), realpath(root)
    if real is None or inside is None or not real.is_relative_to(inside):
        raise GemLoadError(f"{module.name} is a link out of the integration's folder", file=str(module))
    links = GemLinks(inside).check()  # N1: Deno would follow a link out of the folder
    if links is not None:
        raise GemLoadError(f"{module.name}: {links.message}", file=str(module), **links.details)
    loops = link_problems(inside)  # a loop too, as in a gem (GemLinks looks for links out only)
    if loops:
        raise GemLoadError(loops[0]["message"], file=loops[0]["file"], pointer=loops[0]["pointer"])
    os.close(open_regular(real, follow=False))  # a FIFO would hang Deno's import until its timeout
    try:
        answer = probe(
            [real.as_uri()], read=[inside, SDK], deno_dir=deno_dir(), import_map=IMPORT_MAP, describe=True
        )
    except ProbeError as exc:
        raise GemLoadError(f"{module.name}: {_WHY.get(exc.why, 'the module could not be loaded')}: {exc.message}",
                           file=str(module), **exc.details) from None  # fmt: skip
    got = (answer.get("modules") or [{}])[0]
    if not got.get("ok"):
        raise _failure(module, got)
    description = got.get("description")  # checked by check_description
    return description if isinstance(description, dict) else {}


_WHY = {
    "timeout": "importing the module (its top-level code runs when the platform loads it)",
    "printed": "the module printed too much while it was imported; it was stopped",
    "too_large": "the integration's definition is too large as JSON (make its schemas and examples smaller)",
}


def _failure(module: Path, a: dict[str, Any]) -> GemLoadError:
    kind, message = a.get("kind"), str(a.get("message", ""))
    name = module.name
    if kind == "definition":  # the SDK's check: "tools.0.parameters: …"
        path = str(a.get("path", ""))
        issues = [i for i in a.get("issues", []) if isinstance(i, dict)]
        return GemLoadError(
            f"{name}: {clip(message, 2000)}",
            file=str(module),
            pointer=path,
            issues=[
                {"path": str(i.get("path")), "message": clip(str(i.get("message")), 500)} for i in issues
            ],
        )
    if kind == "no_default":
        return GemLoadError(
            f"{name} has no default export; write `export default defineIntegration({{ slug, egress, "
            "tools }})` (import { defineIntegration } from '@ekanos/sdk')",
            file=str(module),
            pointer="default",
        )
    if kind == "not_integration":
        return GemLoadError(
            f"{name}'s default export is a {clip(message, 40)}, not the value defineIntegration() "
            "returns: wrap the definition in defineIntegration({ slug, egress, tools }) from "
            "'@ekanos/sdk'",
            file=str(module),
            pointer="default",
        )
    where = _line(str(a.get("stack", "")) + "\n" + message, module)
    return GemLoadError(
        f"{name}: the module threw while loading{where}: {a.get('name', 'Error')}: {clip(message, 2000)}",
        file=str(module),
        **({"line": int(where.rsplit(":", 1)[-1])} if where else {}),
    )


def _line(text: str, module: Path) -> str:
    m = re.search(re.escape(module.as_uri()) + r":(\d+)", text)
    return f" at {module.name}:{m.group(1)}" if m else ""


# -- the description, checked and made the gem model -------------------------------------------


def _bad(module: Path, path: str, message: str) -> GemLoadError:
    return GemLoadError(f"{module.name}: {path}: {message}", file=str(module), pointer=path)


def check_description(module: Path, d: Any) -> list[tuple[str, str]]:
    """Problems of a description (the SDK checks the same at import: this is the Python side
    of K3–K5, so a forged description is caught too), as (path, message)."""
    if not isinstance(d, dict) or deeper_than(d, MAX_DEPTH):
        return [("", "the description is not an object (or nested too deeply)")]
    out: list[tuple[str, str]] = []
    slug = d.get("slug")
    if not isinstance(slug, str):
        out.append(("slug", "a slug is a string, e.g. 'acme-payments'"))
    elif why := slug_problem(slug):  # K4, and the gem's id (gem.names: the workbench's rule, SEC2)
        out.append(("slug", why))
    egress = d.get("egress")
    if not isinstance(egress, list):
        out.append(("egress", "a list of host names"))
    else:
        out += [(f"egress.{i}", why) for i, h in enumerate(egress) if (why := egress_entry_problem(h))]
    storage = d.get("storage")
    if storage is not None and not isinstance(storage, dict):
        out.append(("storage", "an object {account: {<key>: <JSON Schema>}}"))
    for scope, keys in (storage or {}).items():
        if scope != "account" or not isinstance(keys, dict):
            out.append((f"storage.{scope}", "the scopes are: account (an object of key: JSON Schema)"))
            continue
        for key, schema in keys.items():
            if not key or len(key) > MAX_KEY_CHARS:
                out.append((f"storage.account.{key[:40]}", f"a key is 1 to {MAX_KEY_CHARS} characters"))
                continue
            for ptr, msg in check_input_schema(schema, STORAGE_RULES):
                out.append((f"storage.account.{key}" + ptr.replace("/", "."), msg))
    tools = d.get("tools")
    if not isinstance(tools, list) or not tools or len(tools) > MAX_TOOLS:
        return [*out, ("tools", f"an integration has a list of 1 to {MAX_TOOLS} tools")]
    seen: dict[str, int] = {}
    for i, t in enumerate(tools):
        if not isinstance(t, dict):
            out.append((f"tools.{i}", "a tool is an object"))
            continue
        name, eff = t.get("name"), str(t.get("effectiveName"))
        if not isinstance(name, str) or not NAME.fullmatch(name):
            out.append((f"tools.{i}.name", f"{clip(repr(name), 80)} must match ^[a-z][a-z0-9_]*$ (K4)"))
        elif isinstance(slug, str) and eff != effective_name(slug, name):
            out.append((f"tools.{i}.name", "the effective name is not the slug's prefix + the name (K4)"))
        elif eff in seen:
            out.append((f"tools.{i}.name", f"{eff!r} is tools.{seen[eff]}'s effective name too (K4)"))
        else:
            seen[eff] = i
        if not isinstance(t.get("description"), str) or not t["description"]:
            out.append((f"tools.{i}.description", "a non-empty string the model reads"))
        params = t.get("parameters")
        if params is not None:
            for ptr, msg in check_input_schema(params, RULES):
                out.append((f"tools.{i}.parameters" + ptr.replace("/", "."), msg))
        example = t.get("outputExample")
        if not isinstance(example, dict):
            out.append((f"tools.{i}.outputExample", "an object (plain JSON), not an array (K5)"))
    return out


def misspellings(d: dict[str, Any]) -> list[tuple[str, str]]:
    """(tools.<i>.<key>, message) for each unknown tool key that likely misspells one the tool
    lacks (`input_schema`, `inputSchema` for `parameters`): the SDK keeps such a key and the
    model never sees it, so the tool would silently take no parameters."""
    out = []
    for i, t in enumerate(d.get("tools") or []):
        extra = t.get("extraKeys") if isinstance(t, dict) else None
        if not isinstance(extra, list):
            continue
        missing = [k for k in TOOL_KEYS if t.get(k) is None]
        for key in extra:
            meant = close_key(key, missing) if isinstance(key, str) else None
            if meant:
                out.append(
                    (
                        f"tools.{i}.{clip(str(key), 60)}",
                        f"unknown key: did you mean {meant!r}? (the platform ignores it)",
                    )
                )
    return out


TOOL_KEYS = ("name", "description", "parameters", "outputExample")


def effective_name(slug: str, name: str) -> str:
    """K4: the slug with hyphens as underscores, `_`, the name — unless it already has it."""
    prefix = slug.replace("-", "_") + "_"
    return name if name.startswith(prefix) else prefix + name


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the integration at `root` as {file, pointer, message}; [] when fine."""
    root = realpath(Path(root)) or Path(root).absolute()
    try:
        module = entry(root)
        d = describe(root)
    except GemLoadError as exc:
        issues = exc.details.get("issues") or [
            {"path": exc.details.get("pointer", ""), "message": exc.message}
        ]
        return [
            {"file": exc.details.get("file", str(root)), "pointer": i["path"], "message": i["message"]}
            for i in issues
        ]
    return [{"file": str(module), "pointer": p, "message": m} for p, m in check_description(module, d)]


def load_integration(root: str | os.PathLike[str]) -> Manifest:
    """Load the integration at `root`; GemLoadError naming the module and `tools.<i>.<field>`."""
    root = realpath(Path(root)) or Path(root).absolute()
    module = entry(root)
    d = describe(root)
    problems = check_description(module, d)
    if problems:
        raise _bad(module, *problems[0])
    for where, message in misspellings(d):  # the SDK keeps an unknown key: a warning, not an error
        warnings.warn(f"{module}: {where}: {message}", GemWarning, stacklevel=2)
    language = LANGUAGES[module.suffix]
    tools: dict[str, ToolSpec] = {}
    for t in d["tools"]:
        tools[t["name"]] = ToolSpec(
            name=t["name"],
            file=module,
            rel_file=module.name,
            description=t.get("description") or "",
            input_schema=t.get("parameters") or {"type": "object"},
            side_effect="write",
            permissions={},
            language=language,
        )
    return Manifest(
        root=root,
        id=d["slug"],
        name=d["slug"],
        version="",
        platform="ekanos",
        permissions={},
        collections={},
        resources=(),
        tools=tools,
        schema_sql=None,
        raw=d,
        aliases={t["effectiveName"]: t["name"] for t in d["tools"] if t["effectiveName"] != t["name"]},
    )
