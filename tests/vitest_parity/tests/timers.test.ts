import { describe, it, expect, vi, afterEach } from 'vitest';

describe('fake timers', () => {
  afterEach(() => { vi.useRealTimers(); });
  it('pass: advanceTimersByTime runs what is due, in order', () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    setTimeout(() => seen.push('b'), 200);
    setTimeout(() => seen.push('a'), 100);
    vi.advanceTimersByTime(150);
    expect(seen).toEqual(['a']);
    vi.advanceTimersByTime(50);
    expect(seen).toEqual(['a', 'b']);
  });
  it('pass: intervals repeat and clearInterval stops them', () => {
    vi.useFakeTimers();
    const tick = vi.fn();
    const id = setInterval(tick, 10);
    vi.advanceTimersByTime(35);
    expect(tick).toHaveBeenCalledTimes(3);
    clearInterval(id);
    vi.advanceTimersByTime(100);
    expect(tick).toHaveBeenCalledTimes(3);
  });
  it('pass: Date.now follows the fake clock', () => {
    vi.useFakeTimers();
    const t0 = Date.now();
    vi.advanceTimersByTime(5000);
    expect(Date.now() - t0).toBe(5000);
    expect(new Date().getTime() - t0).toBe(5000);
  });
  it('pass: a cleared timeout never fires', () => {
    vi.useFakeTimers();
    const f = vi.fn();
    clearTimeout(setTimeout(f, 10));
    vi.advanceTimersByTime(100);
    expect(f).not.toHaveBeenCalled();
  });
  it('pass: useRealTimers gives real timers back', async () => {
    vi.useFakeTimers();
    vi.useRealTimers();
    await new Promise((r) => setTimeout(r, 5));
    expect(vi.isFakeTimers()).toBe(false);
  });
  it('fail: a timer not yet due', () => {
    vi.useFakeTimers();
    const f = vi.fn();
    setTimeout(f, 1000);
    vi.advanceTimersByTime(999);
    expect(f).toHaveBeenCalled();
  });
});

describe('stubGlobal', () => {
  afterEach(() => { vi.unstubAllGlobals(); });
  it('pass: stubs a global and unstubAllGlobals restores it', () => {
    vi.stubGlobal('fetch', vi.fn().mockResolvedValue(new Response('{"ok":true}')));
    expect(vi.isMockFunction(globalThis.fetch)).toBe(true);
  });
  it('pass: the global is back', () => {
    expect(vi.isMockFunction(globalThis.fetch)).toBe(false);
  });
  it('pass: a new global name', () => {
    vi.stubGlobal('__answer', 42);
    expect((globalThis as any).__answer).toBe(42);
  });
  it('pass: and gone again', () => {
    expect('__answer' in globalThis).toBe(false);
  });
});
