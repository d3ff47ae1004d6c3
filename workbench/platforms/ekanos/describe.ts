// Loads an Ekanos integration to describe it (workbench/platforms/ekanos/loader.py).
//   deno run --import-map=<sdk map> --allow-read=<gem>,<sdk>,<here> describe.ts <integration URL> <gem> <sdk> <max chars>
// The module runs in a Worker that may only read the gem and the SDK, as tools do in the
// sandbox. Its description (or why there is none) is the LAST line this process writes, after
// the Worker is gone: whatever the module printed comes before it and cannot follow it.
const [url, gem, sdk, most] = Deno.args;
const w = new Worker(new URL("./describe_worker.ts", import.meta.url), {
  type: "module",
  deno: { permissions: { read: [gem, sdk], write: false, net: false, env: false, run: false,
                         ffi: false, sys: false, import: false } },
});
const answer: string = await new Promise((resolve) => {
  w.onmessage = (e: MessageEvent) => resolve(typeof e.data === "string" ? e.data : "");
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    resolve(JSON.stringify({ ok: false, kind: "import", name: "Error", message: e.message }));
  };
  w.postMessage(url);
});
w.terminate();
const limit = Number(most);
const text = answer.length > limit // the Python side reads a bounded tail: say why, briefly
  ? JSON.stringify({ ok: false, kind: "too_large", message: String(answer.length) })
  : answer;
await Deno.stdout.write(new TextEncoder().encode("\n\u001e" + text + "\n"));
