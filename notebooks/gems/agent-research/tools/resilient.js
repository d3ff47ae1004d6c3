// Not from the seed: the resilience the seed recommends ("wrap in try/catch if you need
// resilience") around a built-in whose dispatch fails.
export async function handle(input, ctx) {
  try {
    const found = await ctx.tools.web_search({ query: `${input.topic} site:deno.com`, count: 1 });
    return { ok: true, found };
  } catch (e) {
    await ctx.audit("search_unavailable", { reason: e.message });
    return { ok: false, reason: e.message };
  }
}
