export default async function (input, ctx) {
  const modelPath = await ctx.resources.path('ocr-model')
  const model = await Deno.readFile(modelPath)
  // do something with model...
  return { ok: true }
}
