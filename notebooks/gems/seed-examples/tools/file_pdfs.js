export default async function (input, ctx) {
  // input.table is "sales.csv", input.target is "inbox/": what the AI passes in are relative paths inside the conversation folder
  const csv = await ctx.files.read('workspace:' + input.table)
  const dir = 'workspace:' + input.target
  for (const f of await ctx.files.list(dir)) {
    if (f.type === 'file' && f.name.endsWith('.pdf')) {
      await ctx.files.move(dir + f.name, dir + 'PDF/' + f.name)
    }
  }
  await ctx.files.write('output/report.md', '# 本月汇总\n…')
  return { ok: true }
}
