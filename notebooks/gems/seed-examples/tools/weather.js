// Not a seed example: a small ctx.http.fetch tool using the "acme" connection (N10).
export default async function (input, ctx) {
  const res = await ctx.http.fetch(`${input.base ?? 'https://api.acme.example'}/v1/weather?city=${input.city}`,
                                   { connection: 'acme' })
  return { status: res.status, body: await res.json(), credentialDenied: res.credentialDenied ?? null }
}
