"""Where the doctor's search starts: what the gem already knows.

A tool often does its real work only on real inputs: a file name that exists, a key that is
stored, a message id in the mailbox, a recipient the user allowed. Drawn at random from a
schema those are never hit, so the search seeds its string fields with them (mixed into every
string strategy, inputs.py) and tries, before any drawn input, each tool's pinned-case inputs
and its plainest input with each of its top-level string fields set to a seed.

The seeds are read once per run, bounded (the first MAX_SEEDS strings of at most
MAX_SEED_CHARS characters; the first MAX_CASE_FILES case files of at most MAX_CASE_BYTES). A
secret's value is never a seed: a tool echoing its input would show it as a leak of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ..bench.bench import Bench

MAX_SEEDS = 200  # strings in all
MAX_SEED_CHARS = 1_000  # of one seed string
MAX_CASE_FILES = 200  # pinned cases read
MAX_CASE_BYTES = 2_000_000  # of one case file read
MAX_ENTRIES = 2_000  # files, keys, ids looked at per source
MAX_PINNED = 8  # pinned inputs tried first per tool
MAX_SEEDED = 16  # seeded inputs (a field set to a seed) tried first per tool


@dataclass
class Seeds:
    """Strings the gem knows (file names, keys, ids, addresses, pinned strings), by where they
    come from, and each tool's pinned inputs."""

    sources: dict[str, list[str]] = field(default_factory=dict)
    pinned: dict[str, list[Any]] = field(default_factory=dict)
    source: str = "cases"  # where `add` puts what it is given
    # what the bench allows, by the string format a field of it declares ("email": the
    # addresses send_email may mail, "hostname", "uri"): such a field is drawn from these
    formats: dict[str, list[str]] = field(default_factory=dict)

    def add(self, value: Any) -> None:
        bucket = self.sources.setdefault(self.source, [])
        if isinstance(value, str) and value and len(value) <= MAX_SEED_CHARS and value not in bucket:
            if len(bucket) < MAX_SEEDS:
                bucket.append(value)

    @property
    def strings(self) -> list[str]:
        """The seeds, one of each source in turn (many pinned strings do not crowd out the
        file names), at most MAX_SEEDS."""
        out: list[str] = []
        lists = list(self.sources.values())
        for i in range(max((len(b) for b in lists), default=0)):
            for b in lists:
                if i < len(b) and b[i] not in out and len(out) < MAX_SEEDS:
                    out.append(b[i])
        return out


def _leaves(value: Any, out: Seeds, depth: int = 0) -> None:
    """The string leaves of a pinned input, in order."""
    if depth > 6:
        return
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for v in list(value.values())[:50]:
            _leaves(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value[:50]:
            _leaves(v, out, depth + 1)


def _cases(root: Path, out: Seeds) -> None:
    """Pinned cases under tests/calls/: their inputs, per tool, and their strings."""
    folder = root / "tests" / "calls"
    if not folder.is_dir():
        return
    try:
        files = sorted(folder.rglob("*.json"))[:MAX_CASE_FILES]
    except OSError:
        return
    for path in files:
        try:
            if path.is_symlink() or path.stat().st_size > MAX_CASE_BYTES:
                continue
            case = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a broken case is the replay's to report, not the doctor's
        if not isinstance(case, dict) or not isinstance(case.get("tool"), str) or "input" not in case:
            continue
        pinned = out.pinned.setdefault(case["tool"], [])
        if case["input"] not in pinned and len(pinned) < MAX_PINNED:
            pinned.append(case["input"])
        _leaves(case["input"], out)


def _state(bench: Bench, out: Seeds) -> None:
    """The fixtures' file names (the path and its last part), kv keys (an Ekanos account
    record's as `ctx.storage.account` names it), document ids and collection names, as the
    bench holds them when the run starts."""
    p = bench.providers
    try:
        roots = p.files.roots()
    except Exception:  # a provider without files: nothing to seed from
        roots = []
    if "workspace" in roots:
        for n, (path, _entry) in enumerate(p.files.walk("workspace")):
            if n >= MAX_ENTRIES:
                break
            name = path.rsplit("/", 1)[-1]
            if not path or name.startswith("."):  # SEC3: dot-entries are no state a call finds
                continue
            out.add(path)
            out.add(name)
    out.source = "storage"
    store = p.store
    from ..ctx.account import PREFIX  # Ekanos' account records: kv keys under a prefix

    for key, _ in store.kv_items()[:MAX_ENTRIES]:
        out.add(key[len(PREFIX) :] if key.startswith(PREFIX) else key)  # as the tool names it
    for collection in store.collections()[:50]:
        out.add(collection)
        for doc_id, _ in store.docs(collection)[:MAX_ENTRIES]:
            out.add(doc_id)


def _mail(bench: Bench, out: Seeds) -> None:
    """Mailbox accounts and message ids; the recipients agent tools may mail and the hosts
    requests may go to (what the bench allows: ctx/reach.py)."""
    from ..ctx.reach import reach

    email = getattr(bench, "email", None)  # (the Face's ctx.email view; None: no ctx.email)
    usable: list[str] = []  # the accounts a tool may read: an account field is drawn from them
    if email is not None:
        granted = email.allowed
        try:  # a real mailbox (read-only) may fail to answer: then no ids from it
            accounts = list(email.accounts)[:10]
            usable = accounts if granted == "all" else [a for a in granted if isinstance(a, str)][:10]
            for account in [*([] if granted == "all" else granted), *accounts]:
                out.add(account)
            for account in accounts:
                for env in email.mailbox.envelopes_since(account, 0, 50):
                    out.add(getattr(env, "id", None))
        except (WorkbenchError, OSError):
            pass
    allowed = reach(bench)
    for address in allowed.addresses:  # "*@example.com": an address it allows, team@example.com
        out.add(address)
    urls = [f"https://{host}/" for host in allowed.hosts]
    for value in [*allowed.hosts, *urls]:
        out.add(value)
    formats = {"email": allowed.addresses, "idn-email": allowed.addresses, "hostname": allowed.hosts}
    formats |= {"uri": urls, "url": urls, "iri": urls, "account": usable}
    out.formats = {k: v for k, v in formats.items() if v}


def gather(bench: Bench) -> Seeds:
    """The seeds of a run on `bench`, as it is when the run starts (its fixtures)."""
    out = Seeds()
    _cases(bench.manifest.root, out)
    out.source = "files"
    _state(bench, out)
    out.source = "mail"
    _mail(bench, out)
    return out


def seeded_examples(schema: Any, plain: Any, seeds: Seeds) -> list[Any]:
    """`plain` (the plainest input) with each of its schema's top-level string fields set to
    each seed its bounds admit, round-robin over the fields; at most MAX_SEEDED."""
    strings = seeds.strings
    if not isinstance(schema, dict) or not isinstance(plain, dict) or not strings:
        return []
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    allowed = _allowed_fields(props, seeds)
    # first: every field that names an address, a host or a URL set to one the bench allows,
    # so that the plainest input reaches what the tool does after its send or fetch
    first = [{**plain, **{k: v[0] for k, v in allowed.items()}}] if allowed else []
    fields = []
    for key, sub in props.items():
        types = sub.get("type") if isinstance(sub, dict) else None
        if types == "string" or isinstance(types, list) and "string" in types:
            assert isinstance(sub, dict)
            lo, hi = sub.get("minLength", 0), sub.get("maxLength")
            fits = [
                s
                for s in strings
                if (not isinstance(lo, int) or len(s) >= lo) and (not isinstance(hi, int) or len(s) <= hi)
            ]
            if "enum" not in sub and "const" not in sub and fits:
                fields.append((key, fits))
    out: list[Any] = first
    for i in range(max((len(f) for _, f in fields), default=0)):
        for key, fits in fields:
            if i < len(fits) and len(out) < MAX_SEEDED:
                out.append({**plain, key: fits[i]})
    return out


#: fields an address or an account id goes in when their schema names no format
_NAMED = {
    **dict.fromkeys(("to", "cc", "bcc", "email", "recipient", "address", "reply_to"), "email"),
    **dict.fromkeys(("account", "accountid", "account_id"), "account"),
}


def _allowed_fields(props: dict[str, Any], seeds: Seeds) -> dict[str, list[str]]:
    """{top-level string field: the allowed values of its format} (a field named like an
    address or an account without a format: the allowed addresses or accounts)."""
    out: dict[str, list[str]] = {}
    for key, sub in props.items():
        if not isinstance(sub, dict) or "enum" in sub or "const" in sub:
            continue
        types = sub.get("type")
        if not (types == "string" or isinstance(types, list) and "string" in types):
            continue
        fmt = sub.get("format") if isinstance(sub.get("format"), str) else None
        if fmt is None:
            fmt = _NAMED.get(key.lower())
        hi = sub.get("maxLength")
        values = [v for v in seeds.formats.get(fmt or "", []) if not isinstance(hi, int) or len(v) <= hi]
        if values:
            out[key] = values
    return out
