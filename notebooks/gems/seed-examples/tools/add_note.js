export default async function (input, ctx) {
  const notes = ctx.data.collection('notes')
  const { id } = await notes.insert({ title: input.title, status: 'open' })
  return { id }
}
