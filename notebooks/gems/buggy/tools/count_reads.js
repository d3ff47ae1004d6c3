export default async function (input, ctx) {
  // declared sideEffect "read", yet it writes: the platform does not check (D4)
  const n = Number((await ctx.storage.kv.get('reads')) ?? 0) + 1
  await ctx.storage.kv.set('reads', String(n))
  return { reads: n }
}
