// The seed's digest with safe paging. listSince returns mail strictly newer than `since`, so a
// cursor that is only "the latest date seen" skips the rest of a group of messages sharing that
// date when a page ends inside the group. This cursor keeps the date AND the ids already
// processed at that date; each call re-reads from that date (since = date - 1, dates are whole
// ms) and skips those ids, so every message is processed exactly once.
// (The page is widened by the ids to skip, so it always has room for 20 new messages while
// fewer than 180 messages share one date.)
export default async function (input, ctx) {
  const saved = await ctx.storage.kv.get('safe_cursor')
  const { date, ids } = saved ? JSON.parse(saved) : { date: 0, ids: [] }
  const seen = new Set(ids)
  const since = date > 0 ? date - 1 : 0
  const limit = Math.min(200, 20 + seen.size)
  const { messages, cursor } = await ctx.email.listSince({ since, limit })
  if (messages.length === 0) return { processed: 0 }   // nothing newer: keep the cursor as is
  let processed = 0
  for (const m of messages) {
    const key = `${m.accountId}/${m.id}`
    if (m.date === date && seen.has(key)) continue   // done at the boundary date last time
    const full = await ctx.email.getMessage({ accountId: m.accountId, id: m.id })
    // do something with full.body...
    processed += 1
  }
  // the ids processed at the newest date seen: all of them, this call's and earlier ones
  const atCursor = messages.filter((m) => m.date === cursor).map((m) => `${m.accountId}/${m.id}`)
  const next = cursor === date ? [...new Set([...ids, ...atCursor])] : atCursor
  await ctx.storage.kv.set('safe_cursor', JSON.stringify({ date: cursor, ids: next }))
  return { processed }
}
