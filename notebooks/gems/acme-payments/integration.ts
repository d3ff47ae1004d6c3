// The Ekanos seed's three tools (seed 003, "Tools"), unmodified, in one integration; then the
// seed's "Genuine fault (throw)" handler as a tool, and one that fetches any URL (to show egress).
import { defineIntegration } from '@ekanos/sdk';

// Account storage schemas (JSON Schema per key): what `ctx.storage.account.set` checks.
export const myStorage = {
  account: {
    'settings/location': {
      type: 'object',
      properties: {
        label: { type: 'string' },
        latitude: { type: 'number' },
        longitude: { type: 'number' },
      },
      required: ['latitude', 'longitude'],
      additionalProperties: false,
    },
  },
};

export default defineIntegration({
  slug: 'acme-payments',
  egress: ['api.acme.example', 'api.example'],
  storage: myStorage,
  tools: [
  {
    name: 'get_current_weather',
    description: "Current conditions for the account's saved location.",
    parameters: {
      type: 'object',
      properties: {
        units: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: [],
      additionalProperties: false,
    },
    outputExample: { temperature: 12.4, units: 'celsius' },

    async run(ctx, args) {
      const saved = await ctx.storage.account.get('settings/location');
      if (!saved) {
        return { error: 'No location saved for this account.' };
      }

      const response = await ctx.fetch(
        `https://api.acme.example/v1/weather?lat=${saved.data.latitude}&lon=${saved.data.longitude}`,
      );

      if (!response.ok) {
        ctx.logger.error({ status: response.status }, 'Forecast fetch failed.');
        return { error: `Acme returned ${response.status}.` };
      }

      return response.json();
    },
  },
  {
    name: 'list_recent_payments',
    description: 'Recent payment transactions for the connected merchant.',
    parameters: {
      type: 'object',
      properties: {
        limit: { type: 'number', description: 'Max results, 1-100' },
      },
      required: [],
      additionalProperties: false,
    },
    // outputExample must be an object (plain JSON), not a top-level array
    outputExample: {
      payments: [{ id: 'pay_123', amount: 100.0, status: 'completed' }],
    },
    async run(ctx, args) {
      const apiKey = await ctx.secrets.get('api_key');
      if (!apiKey) {
        return { error: 'Integration not configured.' };
      }

      const response = await ctx.fetch(
        `https://api.acme.example/v1/payments?limit=${args.limit ?? 10}`
      );

      if (!response.ok) {
        return { error: `API returned ${response.status}` };
      }

      return response.json();
    },
  },
  {
    name: 'refund_payment',
    description: 'Issue a refund for a payment.',
    parameters: {
      type: 'object',
      properties: {
        paymentId: { type: 'string' },
        reason: { type: 'string' },
      },
      required: ['paymentId'],
      additionalProperties: false,
    },
    outputExample: { refundId: 'ref_456', status: 'processed' },
    async run(ctx, args) {
      const apiKey = await ctx.secrets.get('api_key');
      if (!apiKey) {
        return { error: 'Integration not configured.' };
      }

      const response = await ctx.fetch(
        'https://api.acme.example/v1/refunds',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            paymentId: args.paymentId,
            reason: args.reason,
          }),
        }
      );

      if (!response.ok) {
        ctx.logger.error({ status: response.status }, 'Refund request failed.');
        return { error: `Acme returned ${response.status}` };
      }

      return response.json();
    },
  },
  {
    name: 'get_data',
    description: 'The seed\'s "Genuine fault (throw)" handler.',
    parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
    outputExample: { items: [] },
    async run(ctx, args) {
      const response = await ctx.fetch('https://api.example/data');
      if (!response.ok) {
        throw new Error(`API returned ${response.status}`);
      }
      return response.json();
    },
  },
  {
    name: 'check_url',
    description: 'Fetch a URL and report its status (only egress hosts are reachable).',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string' } },
      required: ['url'],
      additionalProperties: false,
    },
    outputExample: { status: 200 },
    async run(ctx, args) {
      const response = await ctx.fetch(args.url);
      return { status: response.status };
    },
  },
  ],
});
