import { describe, it, expect, vi, afterEach } from 'vitest';

describe('vi.fn', () => {
  it('pass: records calls, results and instances', () => {
    const f = vi.fn((a: number, b: number) => a + b);
    expect(f(1, 2)).toBe(3);
    f(3, 4);
    expect(f.mock.calls).toEqual([[1, 2], [3, 4]]);
    expect(f.mock.results).toEqual([{ type: 'return', value: 3 }, { type: 'return', value: 7 }]);
    expect(f.mock.lastCall).toEqual([3, 4]);
    function Thing(this: any) { this.x = 1; }
    const C = vi.fn(Thing);
    const made = new (C as any)();
    expect(C.mock.instances[0]).toBe(made);
  });
  it('pass: a thrown error is a result of type throw', () => {
    const f = vi.fn(() => { throw new Error('nope'); });
    expect(() => f()).toThrow('nope');
    expect(f.mock.results[0].type).toBe('throw');
  });
  it('pass: mockReturnValue and mockReturnValueOnce', () => {
    const f = vi.fn().mockReturnValue('default').mockReturnValueOnce('first').mockReturnValueOnce('second');
    expect([f(), f(), f(), f()]).toEqual(['first', 'second', 'default', 'default']);
  });
  it('pass: mockResolvedValue and mockResolvedValueOnce', async () => {
    const f = vi.fn().mockResolvedValue(1).mockResolvedValueOnce(0);
    expect(await f()).toBe(0);
    expect(await f()).toBe(1);
    await expect(vi.fn().mockRejectedValue(new Error('down'))()).rejects.toThrow('down');
  });
  it('pass: mockImplementation and mockImplementationOnce', () => {
    const f = vi.fn().mockImplementation((x: number) => x * 2).mockImplementationOnce((x: number) => -x);
    expect(f(2)).toBe(-2);
    expect(f(2)).toBe(4);
  });
  it('pass: a bare vi.fn returns undefined', () => {
    expect(vi.fn()()).toBeUndefined();
    expect(vi.isMockFunction(vi.fn())).toBe(true);
  });
  it('pass: mockClear keeps the implementation, mockReset goes back to the original', () => {
    const f = vi.fn(() => 'orig');
    f.mockReturnValue('changed');
    f();
    f.mockClear();
    expect(f.mock.calls).toEqual([]);
    expect(f()).toBe('changed');
    f.mockReset();
    expect(f.mock.calls).toEqual([]);
    expect(f()).toBe('orig');
  });
  it('fail: toHaveBeenCalled on a mock never called', () => {
    expect(vi.fn()).toHaveBeenCalled();
  });
  it('fail: toHaveBeenCalledWith other arguments', () => {
    const f = vi.fn();
    f('a', 1);
    expect(f).toHaveBeenCalledWith('a', 2);
  });
  it('fail: toHaveBeenCalledTimes off by one', () => {
    const f = vi.fn();
    f();
    expect(f).toHaveBeenCalledTimes(2);
  });
  it('fail: a toHaveBeenCalled on a plain function', () => {
    expect(() => {}).toHaveBeenCalled();
  });
});

describe('called matchers', () => {
  it('pass: the toHaveBeenCalled family', () => {
    const f = vi.fn((x: unknown) => x);
    expect(f).not.toHaveBeenCalled();
    f('a', { n: 1 });
    f('b');
    expect(f).toHaveBeenCalled();
    expect(f).toHaveBeenCalledTimes(2);
    expect(f).toHaveBeenCalledWith('a', { n: 1 });
    expect(f).toHaveBeenCalledWith('a', expect.objectContaining({ n: 1 }));
    expect(f).toHaveBeenCalledWith(expect.any(String), expect.anything());
    expect(f).not.toHaveBeenCalledWith('c');
    expect(f).toHaveBeenLastCalledWith('b');
    expect(f).toHaveBeenNthCalledWith(1, 'a', { n: 1 });
    expect(f).toHaveReturned();
    expect(f).toHaveReturnedTimes(2);
    expect(f).toHaveReturnedWith('b');
    expect(f).toHaveLastReturnedWith('b');
  });
  it('fail: toHaveBeenLastCalledWith the first call', () => {
    const f = vi.fn();
    f(1);
    f(2);
    expect(f).toHaveBeenLastCalledWith(1);
  });
  it('fail: toHaveBeenNthCalledWith past the calls', () => {
    const f = vi.fn();
    f(1);
    expect(f).toHaveBeenNthCalledWith(2, 1);
  });
});

const api = {
  greet(name: string) { return `hello ${name}`; },
  get version() { return 1; },
};

describe('vi.spyOn', () => {
  afterEach(() => { vi.restoreAllMocks(); });
  it('pass: a spy calls through and records', () => {
    const spy = vi.spyOn(api, 'greet');
    expect(api.greet('ann')).toBe('hello ann');
    expect(spy).toHaveBeenCalledWith('ann');
  });
  it('pass: a spy can replace the implementation', () => {
    vi.spyOn(api, 'greet').mockReturnValue('stubbed');
    expect(api.greet('bo')).toBe('stubbed');
  });
  it('pass: restoreAllMocks put the original back', () => {
    expect(vi.isMockFunction(api.greet)).toBe(false);
    expect(api.greet('cy')).toBe('hello cy');
  });
  it('pass: mockRestore on one spy', () => {
    const spy = vi.spyOn(api, 'greet').mockImplementation(() => 'x');
    expect(api.greet('d')).toBe('x');
    spy.mockRestore();
    expect(api.greet('d')).toBe('hello d');
  });
  it('pass: a getter spy', () => {
    vi.spyOn(api, 'version', 'get').mockReturnValue(2);
    expect(api.version).toBe(2);
  });
  it('pass: a spy on a global', () => {
    const spy = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    expect(Math.random()).toBe(0.5);
    expect(spy).toHaveBeenCalledOnce();
  });
  it('fail: spyOn a missing method', () => {
    vi.spyOn(api as any, 'missing');
  });
});
