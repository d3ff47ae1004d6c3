import { describe, it, expect } from 'vitest';

class Money {
  constructor(readonly cents: number) {}
}

describe('matchers', () => {
  it('pass: toHaveProperty with paths', () => {
    const o = { a: { b: [{ c: 1 }, { c: 2 }] }, 'x.y': 3, z: undefined };
    expect(o).toHaveProperty('a');
    expect(o).toHaveProperty('a.b[1].c', 2);
    expect(o).toHaveProperty(['a', 'b', 0, 'c'], 1);
    expect(o).toHaveProperty(['x.y'], 3);
    expect(o).toHaveProperty('z');
    expect(o).not.toHaveProperty('a.q');
    expect(o).toHaveProperty('a.b', [{ c: 1 }, { c: 2 }]);
  });
  it('fail: toHaveProperty on a missing path', () => {
    expect({ a: { b: 1 } }).toHaveProperty('a.c');
  });
  it('fail: toHaveProperty with another value', () => {
    expect({ a: { b: 1 } }).toHaveProperty('a.b', 2);
  });
  it('pass: toMatch with a string and a RegExp', () => {
    expect('Payment refunded').toMatch('refund');
    expect('Payment refunded').toMatch(/^pay/i);
    expect('abc').not.toMatch(/z/);
  });
  it('fail: toMatch that does not match', () => {
    expect('abc').toMatch(/^b/);
  });
  it('pass: toBeCloseTo', () => {
    expect(0.1 + 0.2).toBeCloseTo(0.3);
    expect(1.234).toBeCloseTo(1.23, 2);
    expect(1.5).not.toBeCloseTo(1.4);
  });
  it('fail: toBeCloseTo with 5 digits', () => {
    expect(1.2345).toBeCloseTo(1.2346, 5);
  });
  it('pass: toBeInstanceOf', () => {
    expect(new Money(1)).toBeInstanceOf(Money);
    expect(new TypeError('x')).toBeInstanceOf(Error);
    expect({}).not.toBeInstanceOf(Money);
  });
  it('fail: toBeInstanceOf another class', () => {
    expect(new Error('x')).toBeInstanceOf(TypeError);
  });
  it('pass: asymmetric matchers', () => {
    expect({ id: 7, name: 'ann', tags: ['a', 'b', 'c'], at: new Date(0) }).toEqual({
      id: expect.any(Number),
      name: expect.stringContaining('an'),
      tags: expect.arrayContaining(['c', 'a']),
      at: expect.anything(),
    });
    expect({ a: 1, b: { c: 2, d: 3 } }).toEqual(expect.objectContaining({ b: expect.objectContaining({ c: 2 }) }));
    expect('order-123').toEqual(expect.stringMatching(/^order-\d+$/));
    expect(['x']).toEqual(expect.not.arrayContaining(['y']));
    expect({ a: 1 }).toEqual(expect.not.objectContaining({ a: 2 }));
    expect(new Money(5)).toEqual(expect.any(Money));
    expect(() => {}).toEqual(expect.any(Function));
  });
  it('fail: objectContaining with a missing key', () => {
    expect({ a: 1 }).toEqual(expect.objectContaining({ b: 1 }));
  });
  it('fail: arrayContaining with a missing item', () => {
    expect([1, 2]).toEqual(expect.arrayContaining([3]));
  });
  it('fail: stringContaining', () => {
    expect('abc').toEqual(expect.stringContaining('z'));
  });
  it('fail: expect.anything is not null', () => {
    expect(null).toEqual(expect.anything());
  });
  it('pass: toContainEqual, toHaveLength, toThrow forms', () => {
    expect([{ a: 1 }, { b: 2 }]).toContainEqual({ b: 2 });
    expect('abcd').toHaveLength(4);
    expect(() => { throw new RangeError('out of range'); }).toThrow(RangeError);
    expect(() => { throw new RangeError('out of range'); }).toThrow(/range/);
    expect(() => { throw new RangeError('out of range'); }).toThrow('of');
    expect(() => { throw new RangeError('out of range'); }).toThrow(new RangeError('out of range'));
  });
  it('fail: toContainEqual a missing item', () => {
    expect([{ a: 1 }]).toContainEqual({ a: 2 });
  });
  it('pass: the equality family', () => {
    expect({ a: undefined, b: 2 }).toEqual({ b: 2 });
    expect([1, undefined]).not.toStrictEqual([1]);
    expect(new Money(1)).toEqual({ cents: 1 });
    expect(new Money(1)).not.toStrictEqual({ cents: 1 });
    expect(new Set([1, 2])).toEqual(new Set([2, 1]));
    expect(new Map([['k', { v: 1 }]])).toEqual(new Map([['k', { v: 1 }]]));
    expect(NaN).toEqual(NaN);
    expect(0).not.toBe(-0);
  });
  it('fail: toStrictEqual a class instance and a literal', () => {
    expect(new Money(1)).toStrictEqual({ cents: 1 });
  });
  it('pass: resolves and rejects', async () => {
    await expect(Promise.resolve({ ok: true })).resolves.toEqual({ ok: true });
    await expect(Promise.reject(new TypeError('bad'))).rejects.toThrow(TypeError);
    await expect(Promise.reject(new Error('bad'))).rejects.toThrow('bad');
    await expect(Promise.resolve(1)).resolves.not.toBe(2);
  });
  it('fail: rejects on a resolved promise', async () => {
    await expect(Promise.resolve(1)).rejects.toThrow();
  });
  it('pass: toBeTypeOf and toBeNaN', () => {
    expect('s').toBeTypeOf('string');
    expect(NaN).toBeNaN();
  });
});
