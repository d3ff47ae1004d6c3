export async function handle(input, ctx) {
  // input  — the parameters you defined on the tool
  // ctx    — the platform-injected tool context
  return { ok: true };
}
