// Equality as vitest's expect sees it (toEqual, toStrictEqual, toMatchObject) and the asymmetric
// matchers (expect.any, objectContaining, …), shared by expect.ts and the spy matchers.

export const show = (v: unknown): string =>
  typeof v === 'function' ? `[Function ${v.name || 'anonymous'}]` : Deno.inspect(v, { depth: 8, colors: false, compact: true, breakLength: 100 });

export class Asymmetric {
  constructor(readonly label: string, readonly test: (other: unknown) => boolean, readonly inverse = false) {}
  asymmetricMatch(other: unknown): boolean {
    return this.test(other) !== this.inverse;
  }
  toString(): string {
    return `${this.inverse ? 'Not' : ''}${this.label}`;
  }
  [Symbol.for('Deno.customInspect')](): string {
    return this.toString();
  }
}

export const isAsymmetric = (x: unknown): x is Asymmetric =>
  typeof x === 'object' && x !== null && typeof (x as Asymmetric).asymmetricMatch === 'function';

const tag = (x: unknown) => Object.prototype.toString.call(x);

/** Deep equality as vitest's toEqual (strict=false: undefined properties ignored) or toStrictEqual. */
export function equals(a: unknown, b: unknown, strict = false, seen: [unknown, unknown][] = []): boolean {
  if (isAsymmetric(b)) return b.asymmetricMatch(a);
  if (isAsymmetric(a)) return a.asymmetricMatch(b);
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (tag(a) !== tag(b)) return false;
  if (strict && Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (seen.some(([x, y]) => x === a && y === b)) return true; // a cycle met twice compares equal
  seen = [...seen, [a, b]];
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime());
  if (a instanceof RegExp) return String(a) === String(b);
  if (a instanceof Error && (a.message !== (b as Error).message || a.name !== (b as Error).name)) return false;
  if (a instanceof Map) {
    const m = b as Map<unknown, unknown>;
    return a.size === m.size && [...a].every(([k, v]) => m.has(k) && equals(v, m.get(k), strict, seen));
  }
  if (a instanceof Set) {
    const other = [...(b as Set<unknown>)];
    return a.size === other.length && [...a].every((v) => other.some((w) => equals(v, w, strict, seen)));
  }
  if (ArrayBuffer.isView(a)) a = Array.from(a as unknown as ArrayLike<unknown>), b = Array.from(b as ArrayLike<unknown>);
  if (Array.isArray(a) && (a.length !== (b as unknown[]).length)) return false;
  const keys = (o: object) =>
    Object.keys(o).filter((k) => strict || (o as Record<string, unknown>)[k] !== undefined);
  const ka = keys(a as object);
  const kb = keys(b as object);
  if (ka.length !== kb.length) return false;
  if (strict && Array.isArray(a)) {
    for (let i = 0; i < a.length; i++) if ((i in a) !== (i in (b as unknown[]))) return false; // sparseness
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && equals(ra[k], rb[k], strict, seen));
}

export function matchObject(actual: unknown, expected: unknown): boolean {
  if (isAsymmetric(expected)) return expected.asymmetricMatch(actual);
  if (typeof expected !== 'object' || expected === null || typeof actual !== 'object' || actual === null) {
    return equals(actual, expected);
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matchObject(actual[i], e));
  }
  const a = actual as Record<string, unknown>;
  return Object.entries(expected).every(([k, v]) => k in a && matchObject(a[k], v));
}


const typeTest = (ctor: unknown) => (x: unknown): boolean =>
  ctor === Number ? typeof x === 'number' || x instanceof Number
    : ctor === String ? typeof x === 'string' || x instanceof String
    : ctor === Boolean ? typeof x === 'boolean' || x instanceof Boolean
    : ctor === BigInt ? typeof x === 'bigint'
    : ctor === Symbol ? typeof x === 'symbol'
    : ctor === Function ? typeof x === 'function'
    : ctor === Object ? typeof x === 'object' && x !== null
    : typeof ctor === 'function' && x instanceof ctor;

/** expect.any, anything, objectContaining, …; `inverse` for expect.not.* */
export function asymmetricMatchers(inverse: boolean) {
  const ctorName = (c: unknown) => (c as { name?: string })?.name ?? String(c);
  return {
    any: (ctor: unknown) => {
      if (typeof ctor !== 'function') throw new TypeError(`expect.any() takes a constructor (Number, String, a class), got ${show(ctor)}`);
      return new Asymmetric(`Any<${ctorName(ctor)}>`, typeTest(ctor), inverse);
    },
    anything: () => new Asymmetric('Anything', (x) => x !== null && x !== undefined, inverse),
    objectContaining: (o: Record<string, unknown>) =>
      new Asymmetric(`ObjectContaining ${show(o)}`, (x) =>
        typeof x === 'object' && x !== null &&
        Object.entries(o).every(([k, v]) => k in x && equals((x as Record<string, unknown>)[k], v)), inverse),
    arrayContaining: (a: unknown[]) =>
      new Asymmetric(`ArrayContaining ${show(a)}`, (x) => Array.isArray(x) && a.every((e) => x.some((y) => equals(y, e))), inverse),
    stringContaining: (s: string) =>
      new Asymmetric(`StringContaining ${show(s)}`, (x) => typeof x === 'string' && x.includes(s), inverse),
    stringMatching: (p: string | RegExp) =>
      new Asymmetric(`StringMatching ${p instanceof RegExp ? p : show(p)}`, (x) => typeof x === 'string' && new RegExp(p).test(x), inverse),
  };
}
