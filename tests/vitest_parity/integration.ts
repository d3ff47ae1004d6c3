// The vitest parity corpus's integration: tests/*.test.ts run under `deno test` (the workbench's
// vitest) and under real vitest; every case's title starts with its intended outcome.
import { defineIntegration } from '@ekanos/sdk';

export default defineIntegration({
  slug: 'vitest-parity',
  tools: [{ name: 'ping', description: 'Ping.', outputExample: { ok: true }, run: async () => ({ ok: true }) }],
});
