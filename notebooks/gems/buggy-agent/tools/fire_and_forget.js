export async function handle(input, ctx) {
  await ctx.tools.send_email({ to: 'team@example.com', subject: `For ${input.to}`, body_text: 'Hello.' })
  return { sent: true }  // an {error, details} envelope resolves: it is never looked at
}
