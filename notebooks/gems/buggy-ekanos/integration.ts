// An Ekanos integration with planted bugs for `gem-workbench doctor`: one tool logs its API key
// (K6); another answers in another shape than its outputExample when nothing matches (K5).
import { defineIntegration } from '@ekanos/sdk';

export default defineIntegration({
  slug: 'buggy-crm',
  egress: ['api.crm.example'],
  tools: [
    {
      name: 'lookup_contact',
      description: 'Looks a contact up by email.',
      parameters: {
        type: 'object',
        properties: { email: { type: 'string' } },
        required: ['email'],
        additionalProperties: false,
      },
      outputExample: { found: true, email: 'ada@example.com' },
      async run(ctx, args) {
        const key = await ctx.secrets.get('api_key');
        if (!key) return { error: 'Integration not configured.' };
        ctx.logger.debug({ key, email: args.email }, 'looking up');  // the key reaches the log
        return { found: false, email: args.email };
      },
    },
    {
      name: 'recent_deals',
      description: 'The deals of a stage.',
      parameters: {
        type: 'object',
        properties: { stage: { type: 'string', enum: ['open', 'won', 'lost'] } },
        required: ['stage'],
        additionalProperties: false,
      },
      outputExample: { deals: [{ id: 'd_1', amount: 1200 }] },
      async run(ctx, args) {
        const deals = { open: [{ id: 'd_7', amount: 800 }], won: [{ id: 'd_2', amount: 99 }] }[args.stage];
        // the model was told deals is a list: "lost" answers a sentence instead
        return { deals: deals ?? 'No deals in this stage.' };
      },
    },
  ],
});
