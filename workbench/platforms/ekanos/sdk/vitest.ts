// A small `vitest` over Deno.test, so tests written for Ekanos's vitest run unmodified under
// `deno test` with nothing fetched: describe/it/test (.skip, .only, .todo), beforeEach/afterEach,
// and expect with the common matchers. Like vitest (and unlike Deno.test), no op/resource leak
// checks, and a test times out after 5 s unless given another timeout.

type Fn = () => unknown;
interface Suite {
  names: string[];
  skip: boolean;
  only: boolean;
  before: Fn[];
  after: Fn[];
  parent: Suite | null;
}
// One root per Deno process: the workbench runs each test file in its own process, so hooks
// registered outside any describe apply to that file's tests only.
const root: Suite = { names: [], skip: false, only: false, before: [], after: [], parent: null };
let current = root;
const DEFAULT_TIMEOUT = 5000;

function hooks(s: Suite | null, kind: 'before' | 'after'): Fn[] {
  const chain: Fn[][] = [];
  for (let x = s; x; x = x.parent) chain.push(x[kind]);
  return kind === 'before' ? chain.reverse().flat() : chain.flat().reverse();
}

function suite(name: string, fn: Fn, flags: { skip?: boolean; only?: boolean }): void {
  const s: Suite = {
    names: [...current.names, name],
    skip: current.skip || !!flags.skip,
    only: current.only || !!flags.only,
    before: [],
    after: [],
    parent: current,
  };
  const prev = current;
  current = s;
  try {
    const r = fn() as { then?: unknown } | undefined;
    if (r && typeof r.then === 'function') throw new Error(`describe("${name}"): the callback must be synchronous`);
  } finally {
    current = prev;
  }
}

async function withTimeout(p: unknown, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Test timed out in ${ms}ms.`)), ms);
  });
  try {
    await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function register(name: string, fn: Fn | undefined, flags: { skip?: boolean; only?: boolean }, timeout?: number): void {
  const s = current;
  const ms = typeof timeout === 'number' ? timeout : DEFAULT_TIMEOUT;
  Deno.test({
    name: [...s.names, name].join(' > '),
    ignore: s.skip || !!flags.skip || !fn,
    only: s.only || !!flags.only,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      for (const h of hooks(s, 'before')) await withTimeout(h(), ms);
      try {
        await withTimeout(fn!(), ms);
      } finally {
        for (const h of hooks(s, 'after')) await withTimeout(h(), ms);
      }
    },
  });
}

type TestFn = ((name: string, fn?: Fn, timeout?: number) => void) & {
  skip(name: string, fn?: Fn, timeout?: number): void;
  only(name: string, fn?: Fn, timeout?: number): void;
  todo(name: string): void;
};
function makeTest(): TestFn {
  const t = ((name: string, fn?: Fn, timeout?: number) => register(name, fn, {}, timeout)) as TestFn;
  t.skip = (name, fn, timeout) => register(name, fn, { skip: true }, timeout);
  t.only = (name, fn, timeout) => register(name, fn, { only: true }, timeout);
  t.todo = (name) => register(name, undefined, { skip: true });
  return t;
}
export const it: TestFn = makeTest();
export const test: TestFn = it;

type DescribeFn = ((name: string, fn: Fn) => void) & { skip(name: string, fn: Fn): void; only(name: string, fn: Fn): void };
export const describe: DescribeFn = Object.assign((name: string, fn: Fn) => suite(name, fn, {}), {
  skip: (name: string, fn: Fn) => suite(name, fn, { skip: true }),
  only: (name: string, fn: Fn) => suite(name, fn, { only: true }),
});

export function beforeEach(fn: Fn): void {
  current.before.push(fn);
}
export function afterEach(fn: Fn): void {
  current.after.push(fn);
}

export { expect } from './expect.ts';
