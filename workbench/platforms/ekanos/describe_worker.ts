// The Worker of describe.ts: imports the integration and answers with its description (the
// SDK's describeIntegration) or with why it has none, as one JSON string.
import { describeIntegration, isIntegration } from "@ekanos/sdk";

const post = self.postMessage.bind(self);
const stringify = JSON.stringify;

function failure(kind: string, err: unknown): string {
  const e = (err ?? {}) as Record<string, unknown>;
  const text = (v: unknown, n: number) => (typeof v === "string" ? v.slice(0, n) : "");
  return stringify({
    ok: false, kind, name: text(e.name, 200) || typeof err, message: text(e.message, 20_000) || String(err).slice(0, 2000),
    stack: text(e.stack, 20_000), path: text(e.path, 500),
    issues: Array.isArray(e.issues) ? e.issues.slice(0, 50).map((i: any) => ({ path: text(i?.path, 500), message: text(i?.message, 2000) })) : [],
  });
}

self.onmessage = async (e: MessageEvent) => {
  let mod: Record<string, unknown>;
  try {
    mod = await import(e.data);
  } catch (err) {
    post(failure((err as any)?.name === "IntegrationDefinitionError" ? "definition" : "import", err));
    return;
  }
  try {
    if (!("default" in mod)) {
      post(stringify({ ok: false, kind: "no_default", message: "" }));
    } else if (!isIntegration(mod.default)) {
      post(stringify({ ok: false, kind: "not_integration", message: typeof mod.default }));
    } else {
      post(stringify({ ok: true, description: describeIntegration(mod.default) }));
    }
  } catch (err) {
    post(failure("describe", err));
  }
};
