// A daily digest: the mail that came since the last run, written as workspace:digests/<date>.md.
// `new Date()` is the bench clock's now in the workbench (docs/clock.md), so a notebook can run
// a week of days in a second. The kv cursor keeps the latest date read AND the ids read at that
// date, and re-reads that date skipping them, so mail sharing a timestamp is never lost
// (notebooks/03-email-cursor-replay.ipynb shows the date-only cursor that loses it).
export default async function (input, ctx) {
  const today = new Date().toISOString().slice(0, 10)
  const saved = await ctx.storage.kv.get('cursor')
  const { date, ids } = saved ? JSON.parse(saved) : { date: 0, ids: [] }
  const seen = new Set(ids)
  const key = (m) => `${m.accountId}/${m.id}`
  const since = date > 0 ? date - 1 : 0
  const { messages, cursor } = await ctx.email.listSince({ since, limit: Math.min(200, 50 + seen.size) })
  const fresh = messages.filter((m) => !(m.date === date && seen.has(key(m))))
  const lines = [`# Mail digest, ${today}`, '']
  for (const m of fresh) lines.push(`- ${m.subject} (${m.fromAddr})`)
  if (fresh.length === 0) lines.push('No new mail.')
  await ctx.files.write(`workspace:digests/${today}.md`, lines.join('\n') + '\n')
  if (fresh.length > 0) {
    const atCursor = messages.filter((m) => m.date === cursor).map(key)
    const next = cursor === date ? [...new Set([...ids, ...atCursor])] : atCursor
    await ctx.storage.kv.set('cursor', JSON.stringify({ date: cursor, ids: next }))
  }
  return { date: today, digested: fresh.map((m) => m.subject) }
}
