// The seed's other two tools (seed 003, "Common patterns"): secrets, errors, the refund POST.
import integration, { myStorage } from '../integration.ts';
import { createMockContext } from '@ekanos/sdk/testing';
import { describe, expect, it } from 'vitest';

const [, listPayments, refundPayment] = integration.tools;
const slug = { slug: 'acme-payments' };

describe('list_recent_payments', () => {
  it('without the api_key secret returns { error }', async () => {
    const ctx = createMockContext({ integration: slug, egress: integration.egress, secrets: { account: {} } });
    expect(await listPayments.run(ctx, {})).toEqual({ error: 'Integration not configured.' });
  });

  it('lists payments, 10 unless told', async () => {
    const urls: string[] = [];
    const ctx = createMockContext({
      integration: slug,
      egress: integration.egress,
      secrets: { account: { api_key: 'k' } },
      fetchHandlers: [
        {
          match: (url) => url.startsWith('https://api.acme.example/v1/payments'),
          respond: (req) => (urls.push(req.url), Response.json({ payments: [{ id: 'pay_1', amount: 5, status: 'completed' }] })),
        },
      ],
    });
    const result = await listPayments.run(ctx, {});
    expect(result).toMatchObject({ payments: [{ id: 'pay_1' }] });
    await listPayments.run(ctx, { limit: 3 });
    expect(urls).toEqual(['https://api.acme.example/v1/payments?limit=10', 'https://api.acme.example/v1/payments?limit=3']);
  });

  it('a 500 is { error }', async () => {
    const ctx = createMockContext({
      integration: slug,
      egress: integration.egress,
      secrets: { account: { api_key: 'k' } },
      fetchHandlers: [{ match: 'https://api.acme.example', respond: () => new Response('oops', { status: 500 }) }],
    });
    expect(await listPayments.run(ctx, {})).toEqual({ error: 'API returned 500' });
  });
});

describe('refund_payment', () => {
  it('POSTs the payment id and reason as JSON', async () => {
    const ctx = createMockContext({
      integration: slug,
      storageSchemas: myStorage,
      egress: integration.egress,
      secrets: { account: { api_key: 'k' } },
      fetchHandlers: [
        {
          match: 'https://api.acme.example/v1/refunds',
          respond: async (req) => {
            expect(req.method).toBe('POST');
            expect(req.headers.get('content-type')).toBe('application/json');
            expect(await req.json()).toEqual({ paymentId: 'pay_123', reason: 'duplicate' });
            return Response.json({ refundId: 'ref_456', status: 'processed' });
          },
        },
      ],
    });
    const result = await refundPayment.run(ctx, { paymentId: 'pay_123', reason: 'duplicate' });
    expect(result).toEqual({ refundId: 'ref_456', status: 'processed' });
  });

  it('a refused refund is { error }, logged with its status', async () => {
    const ctx = createMockContext({
      integration: slug,
      egress: integration.egress,
      secrets: { account: { api_key: 'k' } },
      fetchHandlers: [{ match: 'https://api.acme.example', respond: () => new Response('no', { status: 402 }) }],
    });
    expect(await refundPayment.run(ctx, { paymentId: 'pay_9' })).toEqual({ error: 'Acme returned 402' });
    expect(ctx.logs).toMatchObject([{ level: 'error', fields: { status: 402 } }]);
  });
});

describe('egress', () => {
  it('a fetch outside egress throws, before any handler runs', async () => {
    let called = false;
    const ctx = createMockContext({
      integration: slug,
      egress: integration.egress,
      fetchHandlers: [{ match: () => true, respond: () => ((called = true), new Response('')) }],
    });
    await expect(ctx.fetch('https://evil.test/steal')).rejects.toThrow('evil.test is not allowed');
    await expect(ctx.fetch('https://api.acme.example@evil.test/')).rejects.toThrow(/credentials/);
    await expect(ctx.fetch('http://api.acme.example/')).rejects.toThrow('only https://');
    expect(called).toBe(false);
  });

  it('the integration is well formed (K3–K5)', () => {
    expect(integration.tools.map((t) => t.name)).toEqual(['get_current_weather', 'list_recent_payments', 'refund_payment', 'get_data', 'check_url']);
    expect(integration.egress).toEqual(['api.acme.example', 'api.example']);
  });
});
