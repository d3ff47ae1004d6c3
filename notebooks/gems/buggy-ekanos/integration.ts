// An Ekanos integration with a planted bug for `gem-workbench doctor`: it logs its API key (K6).
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
  ],
});
