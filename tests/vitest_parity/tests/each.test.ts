import { describe, it, test, expect } from 'vitest';

it.each([
  [1, 1, 2],
  [2, 3, 5],
])('pass: add(%i, %i) is %i', (a, b, sum) => {
  expect(a + b).toBe(sum);
});

it.each([[1, 1, 3]])('fail: add(%i, %i) is %i', (a, b, sum) => {
  expect(a + b).toBe(sum);
});

test.each(['ann', 'bo'])('pass: a single-value row %s', (name) => {
  expect(typeof name).toBe('string');
});

test.each([{ a: 'x', n: 1 }, { a: 'y', n: 2 }])('pass: object rows $a and $n', ({ a, n }) => {
  expect(a.length).toBe(n > 0 ? 1 : 0);
});

test.each([{ a: 'z', n: 0 }])('fail: object row $a with $n', ({ n }) => {
  expect(n).toBeGreaterThan(0);
});

it.each`
  a    | b    | expected
  ${1} | ${1} | ${2}
  ${2} | ${2} | ${4}
`('pass: template $a + $b = $expected', ({ a, b, expected }) => {
  expect(a + b).toBe(expected);
});

it.each`
  word     | len
  ${'abc'} | ${2}
`('fail: template $word has length $len', ({ word, len }) => {
  expect(word).toHaveLength(len);
});

it.each([[1, 2]])('pass: index %# and a percent %%', (a, b) => {
  expect(b - a).toBe(1);
});

describe.each([['en', 'hello'], ['fr', 'bonjour']])('greeting %s', (lang, word) => {
  it('pass: is a word', () => {
    expect(word.length).toBeGreaterThan(0);
    expect(lang).toHaveLength(2);
  });
});

describe.each([{ lang: 'de' }])('locale $lang', ({ lang }) => {
  it('fail: is english', () => {
    expect(lang).toBe('en');
  });
});

it.skip('skip: skipped with it.skip', () => {
  throw new Error('never');
});
it.todo('skip: a todo');
describe.skip('skipped describe', () => {
  it('skip: inside a skipped describe', () => {
    throw new Error('never');
  });
});
it.concurrent('pass: concurrent is accepted', async () => {
  expect(await Promise.resolve(1)).toBe(1);
});
it.skipIf(true)('skip: skipIf(true)', () => {
  throw new Error('never');
});
it.runIf(true)('pass: runIf(true)', () => {});
