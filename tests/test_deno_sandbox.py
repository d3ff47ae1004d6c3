"""The Deno sandbox holds (N1, N3, N4): every escape is denied with E_SANDBOX naming the
capability, and leaves no file and no connection behind; reading inside the gem works."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _deno import Server, deno_home, server  # noqa: F401  (fixtures)
from conftest import GemBuilder

import workbench
from workbench.runners.deno.sandbox import HERE

pytestmark = pytest.mark.deno


# ---------------------------------------------------------------------------------------------
# N1 / N4: one gem holding every escape attempt, on one sandbox for the module.
# name -> (capability named by E_SANDBOX, tool source). Inputs: see `paths` below.
ESCAPES: dict[str, tuple[str, str]] = {
    # read outside the gem
    "read_passwd": ("read", "export default async () => await Deno.readTextFile('/etc/passwd')"),
    "read_outside_file": ("read", "export default async (i) => await Deno.readTextFile(i.secret)"),
    "read_sync": ("read", "export default async () => Deno.readFileSync('/etc/passwd').length"),
    "open_passwd": ("read", "export default async () => { await Deno.open('/etc/passwd'); return 1 }"),
    "readdir_etc": (
        "read",
        "export default async () => { const n = []; for await (const e of "
        "Deno.readDir('/etc')) n.push(e.name); return n }",
    ),
    "readdir_gem_parent": (
        "read",
        "export default async (i) => { const n = []; for await (const e "
        "of Deno.readDir(i.outside)) n.push(e.name); return n }",
    ),
    "stat_passwd": ("read", "export default async () => await Deno.stat('/etc/passwd')"),
    "fetch_file_url": ("read", "export default async () => (await fetch('file:///etc/passwd')).text()"),
    "node_fs": (
        "read",
        "import fs from 'node:fs';\nexport default async () => fs.readFileSync('/etc/passwd', 'utf8')",
    ),
    "data_url_reads": (
        "read",
        "export default async () => (await import('data:text/javascript,"
        'export default Deno.readTextFileSync("/etc/passwd")\')).default',
    ),
    # write anywhere, the gem folder included
    "write_gem": ("write", "export default async (i) => { await Deno.writeTextFile(i.gemFile, 'x') }"),
    "write_tools": (
        "write",
        "export default async (i) => { await Deno.writeTextFile(i.toolFile, 'export default () => 1') }",
    ),
    "write_tmp": ("write", "export default async (i) => { await Deno.writeTextFile(i.tmpFile, 'x') }"),
    "create_tmp": (
        "write",
        "export default async (i) => { await Deno.open(i.tmpFile, { write: true, create: true }) }",
    ),
    "mkdir_tmp": ("write", "export default async (i) => { await Deno.mkdir(i.tmpFile) }"),
    "temp_file": ("write", "export default async () => await Deno.makeTempFile()"),
    "remove_manifest": ("write", "export default async (i) => { await Deno.remove(i.manifest) }"),
    "truncate_manifest": ("write", "export default async (i) => { await Deno.truncate(i.manifest) }"),
    "symlink_in_gem": ("write", "export default async (i) => { await Deno.symlink('/etc', i.gemFile) }"),
    "cache_api": (
        "write",
        "export default async () => { const c = await caches.open('x'); "
        "await c.put('http://x/', new Response('kept')); return 1 }",
    ),
    # env, subprocess, ffi, sys
    "env_get": ("env", "export default async () => Deno.env.get('PATH')"),
    "env_object": ("env", "export default async () => Deno.env.toObject()"),
    "env_set": ("env", "export default async () => { Deno.env.set('WB_ESCAPE', '1') }"),
    "node_env": ("env", "import process from 'node:process';\nexport default async () => process.env.PATH"),
    "command": (
        "run",
        "export default async (i) => { await new Deno.Command('/bin/sh', "
        "{ args: ['-c', `touch ${i.tmpFile}`] }).output() }",
    ),
    "deno_run": ("run", "export default async (i) => { Deno.run({ cmd: ['/bin/touch', i.tmpFile] }) }"),
    "kill_parent": ("run", "export default async () => { Deno.kill(Deno.ppid, 'SIGCONT') }"),
    "dlopen": ("ffi", "export default async () => { Deno.dlopen('libc.so.6', {}) }"),
    "os_release": ("sys", "export default async () => Deno.osRelease()"),
    "memory_info": ("sys", "export default async () => Deno.systemMemoryInfo()"),
    "hostname": ("sys", "export default async () => Deno.hostname()"),
    "node_os": ("sys", "import os from 'node:os';\nexport default async () => os.hostname()"),
    # a nested Worker may not ask for more than the tool has
    "worker_escalation": (
        "permissions",
        "export default async () => { new Worker('data:text/"
        "javascript,', { type: 'module', deno: { permissions: "
        "{ read: true, net: true } } }); return 1 }",
    ),
    # imports: outside the gem (absolute and ../), npm: (N4), https:, jsr:; static and dynamic
    "import_abs": ("read", "export default async (i) => (await import(i.outsideModule)).default"),
    "import_rel": ("read", "export default async () => (await import('../../outside.js')).default"),
    "import_abs_static": ("read", "import v from '{outside_module}';\nexport default async () => v"),
    "import_rel_static": ("read", "import v from '../../outside.js';\nexport default async () => v"),
    "import_npm": ("npm", "export default async () => (await import('npm:left-pad@1.3.0')).default"),
    "import_npm_static": (
        "npm",
        "import pad from 'npm:left-pad@1.3.0';\nexport default async () => pad('x', 3)",
    ),
    "import_https": (
        "import",
        "export default async () => (await import('https://deno.land/std@0.224.0/path/mod.ts')).sep",
    ),
    "import_https_static": (
        "import",
        "import { sep } from 'https://deno.land/std@0.224.0/path/mod.ts';\nexport default async () => sep",
    ),
    "import_jsr": ("import", "export default async () => Object.keys(await import('jsr:@std/path'))"),
    "import_jsr_static": ("import", "import { sep } from 'jsr:@std/path@1';\nexport default async () => sep"),
}
NET = {  # need the test's server: {port}
    "fetch": "export default async (i) => await (await fetch(`http://127.0.0.1:${i.port}/x`)).text()",
    "connect": "export default async (i) => { await Deno.connect({ hostname: '127.0.0.1', port: i.port }) }",
    "websocket": "export default async (i) => { new WebSocket(`ws://127.0.0.1:${i.port}/`); return 1 }",
    "node_net": "import net from 'node:net';\nexport default async (i) => new Promise((ok, no) => "
    "{ const s = net.connect(i.port, '127.0.0.1'); s.on('error', no); "
    "s.on('connect', () => ok('connected')) })",
}


@pytest.fixture(scope="module")
def escape(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[workbench.Bench, dict]]:
    base = tmp_path_factory.mktemp("escape")
    (base / "outside.js").write_text("export default 'outside';\n")
    (base / "secret.txt").write_text("secret")
    g = GemBuilder(base / "gem")
    for name, (_, src) in ESCAPES.items():
        g.tool(name, src.replace("{outside_module}", str(base / "outside.js")), ext="js")
    for name, src in NET.items():
        g.tool(name, src, ext="js")
    g.tool(
        "connect_unix",
        "export default async (i) => { await Deno.connect({ transport: 'unix', path: i.path }) }",
        ext="js",
    )
    g.tool(
        "read_inside",
        "export default async () => await Deno.readTextFile(new URL('../data/inside.txt', import.meta.url))",
        ext="js",
    )
    g.tool(
        "read_fd",
        """
        export default async (i) => {
          const out = {};
          for (const p of i.paths) {
            try { const f = await Deno.open(p, i.write ? { write: true } : { read: true });
                  out[p] = "opened"; f.close(); }
            catch (e) { out[p] = e.name; }
          }
          return out;
        }""",
        ext="js",
    )
    root = g.write()
    (root / "data").mkdir()
    (root / "data" / "inside.txt").write_text("inside the gem")
    tag = secrets.token_hex(4)
    paths = {
        "secret": str(base / "secret.txt"),
        "outside": str(base),
        "gemFile": str(root / f"escape-{tag}.txt"),
        "toolFile": str(root / "tools" / "evil.js"),
        "tmpFile": f"/tmp/wb-escape-{tag}",
        "manifest": str(root / "manifest.json"),
        "outsideModule": (base / "outside.js").as_uri(),
    }
    bench = workbench.open(root, providers="mock", timeout=10)
    try:
        assert bench.call("read_inside").ok  # the sandbox is up before the first attempt
        yield bench, paths
    finally:
        bench.close()


@pytest.mark.parametrize("name", list(ESCAPES))
def test_N1_escape_is_denied(escape: tuple[workbench.Bench, dict], name: str) -> None:
    bench, paths = escape
    manifest = Path(paths["manifest"]).read_bytes()
    pid = bench.sandbox.pid
    res = bench.call(name, paths)
    assert res.error is not None, f"{name} escaped the sandbox: {res.value!r:.200}"
    assert res.error.code == "E_SANDBOX", res.error
    cap = ESCAPES[name][0]
    assert res.error.details["capability"] == cap, res.error
    if cap not in ("npm", "import", "permissions"):
        assert f"{cap} access" in res.error.message or f"--allow-{cap}" in res.error.message
    # nothing left behind, and the same sandbox carries on
    for key in ("gemFile", "toolFile", "tmpFile"):
        assert not os.path.lexists(paths[key]), f"{name} left {paths[key]}"
    assert Path(paths["manifest"]).read_bytes() == manifest
    assert bench.sandbox.pid == pid
    assert res.trace.empty


def test_N4_npm_import_is_rejected_with_its_own_message(escape: tuple[workbench.Bench, dict]) -> None:
    bench, paths = escape
    for name in ("import_npm", "import_npm_static"):
        res = bench.call(name, paths)
        assert res.error.code == "E_SANDBOX" and res.error.details["capability"] == "npm"
        assert "npm: imports are rejected (N4)" in res.error.message


def test_N1_cache_api_writes_nothing_under_deno_dir(escape: tuple[workbench.Bench, dict]) -> None:
    bench, paths = escape
    assert bench.call("cache_api", paths).error.code == "E_SANDBOX"
    deno_dir = bench.sandbox.deno_dir
    assert not any("web_cache" in str(p) for p in deno_dir.rglob("*"))


@pytest.mark.parametrize("name", list(NET))
def test_N1_net_is_denied_and_nothing_connects(
    escape: tuple[workbench.Bench, dict], server: Server, name: str
) -> None:
    bench, _ = escape
    res = bench.call(name, {"port": server.port})
    assert res.error is not None and res.error.code == "E_SANDBOX", res
    assert res.error.details["capability"] == "net"
    assert f"127.0.0.1:{server.port}" in res.error.message
    time.sleep(0.05)  # a connection, had one been made, would be accepted by now
    assert server.connections == [] and server.requests == []


def test_N1_the_server_does_see_a_real_client(server: Server) -> None:
    # the recording works: the empty lists above mean "no connection", not "not recorded"
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/probe", timeout=5) as r:
        assert r.read() == b"secret"
    assert server.requests == ["/probe"] and len(server.connections) == 1


def test_N1_reading_inside_the_gem_works(escape: tuple[workbench.Bench, dict]) -> None:
    bench, paths = escape
    res = bench.call("read_inside", paths)
    assert res.ok, res.error
    assert res.value == "inside the gem"


def test_N1_rpc_channel_and_fds_are_unreachable(escape: tuple[workbench.Bench, dict]) -> None:
    bench, _ = escape
    assert bench.call("read_inside").ok  # the sandbox is up: its channel exists
    proc = bench.sandbox.proc
    args = [str(a) for a in proc.args]
    at = args.index(str(HERE / "host.ts"))
    fifos = args[at + 1 : at + 3]  # the host's RPC channel: a FIFO each way
    assert all("wb-rpc-" in f for f in fifos)
    assert not any(map(os.path.exists, fifos))  # unlinked once open: nobody can open them again
    pid = bench.sandbox.pid
    paths = [
        *fifos,
        "/dev/stdin",
        "/dev/stdout",
        "/proc/self/environ",
        f"/proc/{pid}/environ",
        f"/proc/{os.getpid()}/environ",
        *(f"/dev/fd/{n}" for n in range(64)),
        *(f"/proc/self/fd/{n}" for n in range(64)),
        *(f"/proc/{pid}/fd/{n}" for n in range(16)),
        *(f"/proc/{os.getpid()}/fd/{n}" for n in range(16)),
    ]
    for write in (False, True):
        res = bench.call("read_fd", {"paths": paths, "write": write})
        assert res.ok, res.error
        assert set(res.value.values()) == {"NotCapable"}, {
            p: v for p, v in res.value.items() if v != "NotCapable"
        }
    # nor connect to a socket there (Deno checks read first)
    res = bench.call("connect_unix", {"path": fifos[0]})
    assert res.error.code == "E_SANDBOX" and res.error.details["capability"] == "read"
    assert bench.call("read_inside").value == "inside the gem"  # the channel still works


def test_N1_N3_another_gem_is_unreadable(tmp_path: Path, escape: tuple[workbench.Bench, dict]) -> None:
    other = GemBuilder(tmp_path / "other")
    other.manifest["id"] = "test.other"
    other.tool("peek", "export default async (i) => await Deno.readTextFile(i.p)", ext="js")
    b = workbench.open(other.write(), providers="mock")
    try:
        res = b.call("peek", {"p": escape[1]["manifest"]})
        assert res.error.code == "E_SANDBOX" and res.error.details["capability"] == "read"
        assert b.call("peek", {"p": str(tmp_path / "other" / "manifest.json")}).ok
    finally:
        b.close()
