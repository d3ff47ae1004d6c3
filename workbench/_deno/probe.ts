// Imports modules without calling them, to load-check tools and to describe an Ekanos
// integration (workbench/_deno/__init__.py `probe`).
//   deno run ... --allow-read=<read dirs>,<here> probe.ts '<config JSON>'
// config: {urls, read, describe, max}. The modules run in a Worker that may only read `read` (as
// tools do in the sandbox). The answer is the LAST line this process writes, after the Worker
// is gone: whatever a module printed comes before it and cannot follow it.
const config = JSON.parse(Deno.args[0]);
const w = new Worker(new URL("./probe_worker.ts", import.meta.url), {
  type: "module",
  deno: { permissions: { read: config.read, write: false, net: false, env: false, run: false,
                         ffi: false, sys: false, import: false } },
});
const answer: string = await new Promise((resolve) => {
  w.onmessage = (e: MessageEvent) => resolve(typeof e.data === "string" ? e.data : "");
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    resolve(JSON.stringify({ failed: { name: "Error", message: e.message } }));
  };
  w.postMessage({ urls: config.urls, describe: config.describe });
});
w.terminate();
const text = answer.length > config.max // the Python side reads a bounded tail: say why, briefly
  ? JSON.stringify({ tooLarge: answer.length })
  : answer;
await Deno.stdout.write(new TextEncoder().encode("\n\u001e" + text + "\n"));
