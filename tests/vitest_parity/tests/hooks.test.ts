import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from 'vitest';

const log: string[] = [];

beforeAll(() => { log.push('beforeAll root'); });

describe('outer', () => {
  beforeAll(() => { log.push('beforeAll outer'); });
  afterAll(() => { log.push('afterAll outer'); });
  beforeEach(() => { log.push('beforeEach outer'); });
  afterEach(() => { log.push('afterEach outer'); });
  describe('inner', () => {
    beforeAll(() => { log.push('beforeAll inner'); });
    afterAll(() => { log.push('afterAll inner'); });
    beforeEach(() => { log.push('beforeEach inner 1'); });
    beforeEach(() => { log.push('beforeEach inner 2'); });
    afterEach(() => { log.push('afterEach inner 1'); });
    afterEach(() => { log.push('afterEach inner 2'); });
    it('pass: first test sees beforeAll then beforeEach, outer first', () => {
      expect(log).toEqual([
        'beforeAll root', 'beforeAll outer', 'beforeAll inner',
        'beforeEach outer', 'beforeEach inner 1', 'beforeEach inner 2',
      ]);
      log.length = 0;
    });
    it('pass: afterEach ran inner first, in reverse order; beforeAll ran once', () => {
      expect(log).toEqual([
        'afterEach inner 2', 'afterEach inner 1', 'afterEach outer',
        'beforeEach outer', 'beforeEach inner 1', 'beforeEach inner 2',
      ]);
      log.length = 0;
    });
  });
  it('pass: the inner afterAll ran after its last test', () => {
    expect(log).toEqual([
      'afterEach inner 2', 'afterEach inner 1', 'afterEach outer',
      'afterAll inner',
      'beforeEach outer',
    ]);
    log.length = 0;
  });
});

describe('a beforeEach that returns a cleanup', () => {
  let resource: string[] = [];
  beforeEach(() => {
    resource = ['open'];
    return () => { resource.push('closed'); log.push(`cleanup ${resource.join('+')}`); };
  });
  it('pass: the cleanup runs after the test', () => {
    expect(resource).toEqual(['open']);
  });
  it('pass: and had run before this one', () => {
    expect(log).toContain('cleanup open+closed');
  });
});

describe('assertion counts', () => {
  it('pass: expect.assertions counts the expects', async () => {
    expect.assertions(2);
    expect(1).toBe(1);
    await expect(Promise.resolve(2)).resolves.toBe(2);
  });
  it('fail: expect.assertions with too few', () => {
    expect.assertions(3);
    expect(1).toBe(1);
  });
  it('fail: expect.hasAssertions with none', () => {
    expect.hasAssertions();
  });
});
