// The Worker of probe.ts: imports each module in turn and answers, as one JSON string,
// {modules: [{url, ok, exports: {name: typeof}} | {url, ok: false, kind, name, message, stack,
// path, issues}]}; with `describe`, an Ekanos integration's description (the SDK's
// describeIntegration of the first module's default export) or why there is none.
const post = self.postMessage.bind(self);
const stringify = JSON.stringify;

function failure(url: string, kind: string, err: unknown) {
  const e = (err ?? {}) as Record<string, unknown>;
  const text = (v: unknown, n: number) => (typeof v === "string" ? v.slice(0, n) : "");
  return {
    url, ok: false, kind, name: text(e.name, 200) || typeof err,
    message: text(e.message, 20_000) || String(err).slice(0, 2000), stack: text(e.stack, 20_000),
    path: text(e.path, 500),
    issues: Array.isArray(e.issues)
      ? e.issues.slice(0, 50).map((i: any) => ({ path: text(i?.path, 500), message: text(i?.message, 2000) }))
      : [],
  };
}

async function describe(entry: Record<string, unknown>, mod: Record<string, unknown>) {
  const { describeIntegration, isIntegration } = await import("@ekanos/sdk");
  if (!("default" in mod)) return { ...entry, ok: false, kind: "no_default", message: "" };
  if (!isIntegration(mod.default)) {
    return { ...entry, ok: false, kind: "not_integration", message: typeof mod.default };
  }
  return { ...entry, description: describeIntegration(mod.default) };
}

self.onmessage = async (e: MessageEvent) => {
  const { urls, describe: describing } = e.data;
  const modules = [];
  for (const url of urls) {
    let mod: Record<string, unknown>;
    try {
      mod = await import(url);
    } catch (err) {
      const kind = (err as any)?.name === "IntegrationDefinitionError" ? "definition" : "import";
      modules.push(failure(url, kind, err));
      continue;
    }
    const exports: Record<string, string> = {};
    for (const k of Object.keys(mod)) exports[k] = typeof mod[k];
    let entry: Record<string, unknown> = { url, ok: true, exports };
    try {
      if (describing) entry = await describe(entry, mod);
    } catch (err) {
      entry = failure(url, "describe", err);
    }
    modules.push(entry);
  }
  post(stringify({ modules }));
};
