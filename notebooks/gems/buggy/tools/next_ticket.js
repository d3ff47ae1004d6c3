// module memory may or may not survive between calls (N5): this counter relies on it
let last = 0

export default async function (input, ctx) {
  last += 1
  return { ticket: `T-${last}`, topic: input.topic ?? 'general' }
}
