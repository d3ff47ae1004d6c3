export default async function (input, ctx) {
  // Where we got to last time is kept in the gem's own storage
  const since = Number((await ctx.storage.kv.get('cursor')) ?? 0)
  const { messages, cursor } = await ctx.email.listSince({ since, limit: 20 })
  for (const m of messages) {
    const full = await ctx.email.getMessage({ accountId: m.accountId, id: m.id })
    // do something with full.body...
  }
  await ctx.storage.kv.set('cursor', String(cursor))
  return { processed: messages.length }
}
