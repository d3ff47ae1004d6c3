// A small `vitest` over Deno.test, so tests written for Ekanos's vitest run unmodified under
// `deno test` with nothing fetched: describe/it/test (.skip, .only, .todo, .concurrent, .each),
// beforeAll/afterAll/beforeEach/afterEach in vitest's order (before* outer first, after* inner
// first and in reverse registration order: vitest's default `sequence.hooks: 'stack'`), `vi`
// and expect. Like vitest (and unlike Deno.test), no op/resource leak checks, and a test times
// out after 5 s unless given another timeout.
import { assertionsCheck, assertionsReset } from './expect.ts';
import { eachRows, eachTitle } from './each.ts';
import { realTimers } from './mock.ts';

type Fn = () => unknown;
type Hook = () => unknown;
interface Suite {
  names: string[];
  skip: boolean;
  only: boolean;
  beforeAll: Hook[];
  afterAll: Hook[];
  beforeEach: Hook[];
  afterEach: Hook[];
  parent: Suite | null;
  started: boolean; // its beforeAll hooks ran
  failure: { error: unknown } | null; // a beforeAll that threw: every test of the suite fails with it
  teardowns: Hook[]; // functions returned by beforeAll hooks, run with afterAll
}
interface Entry {
  suite: Suite;
  runs: boolean; // not skipped (only-filtering is applied when tests start)
  only: boolean;
}
const newSuite = (parent: Suite | null, name: string | null, flags: Flags): Suite => ({
  names: parent && name !== null ? [...parent.names, name] : [],
  skip: (parent?.skip ?? false) || !!flags.skip,
  only: (parent?.only ?? false) || !!flags.only,
  beforeAll: [], afterAll: [], beforeEach: [], afterEach: [],
  parent, started: false, failure: null, teardowns: [],
});
interface Flags { skip?: boolean; only?: boolean }

// One root per Deno process: the workbench runs each test file in its own process, so hooks
// registered outside any describe apply to that file's tests only.
const root: Suite = newSuite(null, null, {});
let current = root;
const entries: Entry[] = [];
const DEFAULT_TIMEOUT = 5000;

const chainOf = (s: Suite): Suite[] => {
  const chain: Suite[] = [];
  for (let x: Suite | null = s; x; x = x.parent) chain.unshift(x);
  return chain; // outermost first
};

function suite(name: string, fn: Fn, flags: Flags): void {
  const s = newSuite(current, name, flags);
  const prev = current;
  current = s;
  try {
    const r = fn() as { then?: unknown } | undefined;
    if (r && typeof r.then === 'function') throw new Error(`describe("${name}"): the callback must be synchronous`);
  } finally {
    current = prev;
  }
}

async function withTimeout(p: unknown, ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = realTimers.setTimeout(() => reject(new Error(`Test timed out in ${ms}ms.`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    realTimers.clearTimeout(timer);
  }
}

// Each suite's last test that runs: its afterAll hooks run after that test. Worked out when the
// first test starts (the file has registered all of them by then), once: O(tests × depth).
let lastRunner: Map<Suite, Entry> | null = null;
function lastOf(s: Suite, entry: Entry): boolean {
  if (!lastRunner) {
    const anyOnly = entries.some((e) => e.only && e.runs);
    lastRunner = new Map();
    for (const e of entries) if (e.runs && (!anyOnly || e.only)) for (const x of chainOf(e.suite)) lastRunner.set(x, e);
  }
  return lastRunner.get(s) === entry;
}

async function runTest(entry: Entry, fn: Fn, ms: number): Promise<void> {
  const chain = chainOf(entry.suite);
  for (const s of chain) {
    if (s.started) continue;
    s.started = true;
    try {
      for (const h of s.beforeAll) {
        const teardown = await withTimeout(h(), ms);
        if (typeof teardown === 'function') s.teardowns.unshift(teardown as Hook);
      }
    } catch (error) {
      s.failure = { error };
    }
  }
  const errors: unknown[] = [];
  const inner = [...chain].reverse(); // the innermost suite first, as after-hooks run
  const failed = chain.find((s) => s.failure);
  if (failed) errors.push(failed.failure!.error);
  else {
    const cleanups: Hook[] = [];
    try {
      for (const s of chain) {
        for (const h of s.beforeEach) {
          const cleanup = await withTimeout(h(), ms);
          if (typeof cleanup === 'function') cleanups.unshift(cleanup as Hook);
        }
      }
      assertionsReset();
      await withTimeout(fn(), ms);
      assertionsCheck();
    } catch (e) {
      errors.push(e);
    }
    const after = inner.flatMap((s) => [...s.afterEach].reverse());
    await runCollecting([...cleanups, ...after], ms, errors);
  }
  for (const s of inner) {
    if (lastOf(s, entry)) await runCollecting([...s.teardowns, ...[...s.afterAll].reverse()], ms, errors);
  }
  if (errors.length) throw errors[0];
}

/** Run each hook in turn, its error collected into `errors`, the next run all the same. */
async function runCollecting(hooks: Hook[], ms: number, errors: unknown[]): Promise<void> {
  for (const h of hooks) {
    try {
      await withTimeout(h(), ms);
    } catch (e) {
      errors.push(e);
    }
  }
}

function register(name: string, fn: Fn | undefined, flags: Flags, timeout?: number): void {
  const s = current;
  const ms = typeof timeout === 'number' ? timeout : DEFAULT_TIMEOUT;
  const entry: Entry = { suite: s, runs: !(s.skip || flags.skip || !fn), only: s.only || !!flags.only };
  entries.push(entry);
  Deno.test({
    name: [...s.names, name].join(' > '),
    ignore: !entry.runs,
    only: entry.only,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: () => runTest(entry, fn!, ms),
  });
}

type Body = (...args: any[]) => unknown;
type Each<R> = (table: unknown, ...values: unknown[]) => (name: string, fn: Body, timeout?: number) => R;
type Variant = ((name: string, fn?: Fn, timeout?: number) => void) & { each: Each<void> };
type TestFn = Variant & {
  skip: Variant;
  only: Variant;
  concurrent: Variant;
  todo(name: string): void;
  skipIf(cond: unknown): Variant;
  runIf(cond: unknown): Variant;
};

function eachOf(define: (name: string, fn: Fn, timeout?: number) => void): Each<void> {
  return (table, ...values) => (name, fn, timeout) => {
    eachRows(table, values).forEach((args, i) => define(eachTitle(name, args, i), () => fn(...args), timeout));
  };
}

function variant(flags: Flags): Variant {
  const v = ((name: string, fn?: Fn, timeout?: number) => register(name, fn, flags, timeout)) as Variant;
  v.each = eachOf((name, fn, timeout) => register(name, fn, flags, timeout));
  return v;
}

function makeTest(): TestFn {
  const t = variant({}) as TestFn;
  t.skip = variant({ skip: true });
  t.only = variant({ only: true });
  t.concurrent = variant({}); // accepted; tests of a file run one after another here
  t.todo = (name) => register(name, undefined, { skip: true });
  t.skipIf = (cond) => variant({ skip: !!cond });
  t.runIf = (cond) => variant({ skip: !cond });
  return t;
}
export const it: TestFn = makeTest();
export const test: TestFn = it;

type DescribeVariant = ((name: string, fn: Fn) => void) & { each: Each<void> };
type DescribeFn = DescribeVariant & { skip: DescribeVariant; only: DescribeVariant; concurrent: DescribeVariant; todo(name: string): void };
function describeVariant(flags: Flags): DescribeVariant {
  const d = ((name: string, fn: Fn) => suite(name, fn, flags)) as DescribeVariant;
  d.each = eachOf((name, fn) => suite(name, fn, flags));
  return d;
}
export const describe: DescribeFn = Object.assign(describeVariant({}), {
  skip: describeVariant({ skip: true }),
  only: describeVariant({ only: true }),
  concurrent: describeVariant({}),
  todo: (name: string) => suite(name, () => {}, { skip: true }),
});

export function beforeAll(fn: Hook): void {
  current.beforeAll.push(fn);
}
export function afterAll(fn: Hook): void {
  current.afterAll.push(fn);
}
export function beforeEach(fn: Hook): void {
  current.beforeEach.push(fn);
}
export function afterEach(fn: Hook): void {
  current.afterEach.push(fn);
}

export { expect } from './expect.ts';
export { vi } from './mock.ts';
export type { Mock } from './mock.ts';
