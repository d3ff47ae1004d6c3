import { describe, it, expect, vi } from 'vitest';
import { createMockContext } from '@ekanos/sdk/testing';

describe('a mock ctx with vi', () => {
  it('pass: a vi.fn fetch handler sees the request', async () => {
    const respond = vi.fn(() => Response.json({ ok: true }));
    const ctx = createMockContext({
      integration: { slug: 'demo' },
      egress: ['api.example.com'],
      fetchHandlers: [{ match: 'https://api.example.com/', respond }],
    });
    const res = await ctx.fetch('https://api.example.com/v1/ping');
    expect(await res.json()).toEqual({ ok: true });
    expect(respond).toHaveBeenCalledTimes(1);
    expect(respond).toHaveBeenCalledWith(expect.any(Request));
  });
  it('pass: a spy on the logger', () => {
    const ctx = createMockContext({ integration: { slug: 'demo' } });
    const info = vi.spyOn(ctx.logger, 'info');
    ctx.logger.info({ n: 1 }, 'hello');
    expect(info).toHaveBeenCalledWith({ n: 1 }, 'hello');
    expect(ctx.logs).toHaveLength(1);
  });
  it('fail: a fetch outside egress rejects', async () => {
    const ctx = createMockContext({ integration: { slug: 'demo' } });
    await expect(ctx.fetch('https://elsewhere.example/')).resolves.toBeDefined();
  });
});
