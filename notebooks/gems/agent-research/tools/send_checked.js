// The seed's "Errors" snippet, unmodified, as the body of a handler.
export async function handle(input, ctx) {
const result = await ctx.tools.send_email({ to: '...', subject: '...', body_text: '...' });
if (result.error) {
  return { ok: false, reason: result.error, details: result.details };
}
return { ok: true, message_id: result.message_id };
}
