export default async function (input, ctx) {
  // 100,000 copies: under 1,048,576 characters only while the text is 10 characters or less
  return { banner: input.text.repeat(100000) }
}
