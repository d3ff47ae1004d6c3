// The seed's "Testing" snippet (seed 003), its lines verbatim inside a test; only its import
// line moved to the top, since an import cannot stand inside a function. The lines keep their
// column 0 on purpose: a check compares them with the seed, line for line.
import { createMockContext } from '@ekanos/sdk/testing';
import integration, { myStorage } from '../integration.ts';
import { describe, it, expect } from 'vitest';

describe('get_current_weather', () => {
  it('returns the forecast for the saved location (the seed snippet)', async () => {
const ctx = createMockContext({
  integration: { slug: 'acme-payments' },
  storageSchemas: myStorage,
  egress: integration.egress,
  storage: {
    account: {
      'settings/location': {
        label: 'San Francisco',
        latitude: 37.7749,
        longitude: -122.4194,
      },
    },
  },
  secrets: {
    account: { api_key: 'test_key' },
  },
  fetchHandlers: [
    {
      match: 'https://api.acme.example',
      respond: () => Response.json({ temperature: 12.4, units: 'celsius' }),
    },
  ],
});

const result = await integration.tools[0].run(ctx, { units: 'celsius' });
expect(result).toEqual({ temperature: 12.4, units: 'celsius' });
  });

  it('asks for the saved coordinates', async () => {
    let seen = '';
    const ctx = createMockContext({
      integration: { slug: 'acme-payments' },
      storageSchemas: myStorage,
      egress: integration.egress,
      storage: { account: { 'settings/location': { latitude: 1.5, longitude: -2 } } },
      fetchHandlers: [{ match: /\/v1\/weather/, respond: (req) => ((seen = req.url), Response.json({ temperature: 3 })) }],
    });
    await integration.tools[0].run(ctx, {});
    expect(seen).toBe('https://api.acme.example/v1/weather?lat=1.5&lon=-2');
  });

  it('without a saved location returns { error } and fetches nothing', async () => {
    const ctx = createMockContext({ integration: { slug: 'acme-payments' }, egress: integration.egress });
    const result = await integration.tools[0].run(ctx, {});
    expect(result).toEqual({ error: 'No location saved for this account.' });
  });

  it('a 503 from Acme is an expected failure, logged', async () => {
    const ctx = createMockContext({
      integration: { slug: 'acme-payments' },
      egress: integration.egress,
      storage: { account: { 'settings/location': { latitude: 0, longitude: 0 } } },
      fetchHandlers: [{ match: 'https://api.acme.example/', respond: () => new Response('down', { status: 503 }) }],
    });
    expect(await integration.tools[0].run(ctx, {})).toEqual({ error: 'Acme returned 503.' });
    expect(ctx.logs).toEqual([{ level: 'error', message: 'Forecast fetch failed.', fields: { status: 503 } }]);
  });
});
