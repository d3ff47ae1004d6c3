export async function handle(input, ctx) {
  const recipient = input.email;
  const search = await ctx.tools.web_search({
    query: `${input.topic} site:${input.domain}`,
    count: 3,
  });

  await ctx.audit('found_sources', { count: search.length });

  return await ctx.tools.send_email({
    to: recipient,
    subject: `Re: ${input.topic}`,
    body_text: `Hi — here's what we found:\n\n${JSON.stringify(search, null, 2)}`,
  });
}
