export async function handle(input, ctx) {
  const sent = await ctx.tools.send_email({ to: 'team@example.com', subject: input.subject, body_text: 'See subject.' })
  if (sent.error) return { ok: false, reason: sent.error }
  await ctx.audit('notified', { subject: input.subject })
  return { ok: true, message_id: sent.message_id }
}
