// An older integration whose tool's effective name is acme-payments' refund tool's too:
// slug "acme" + "payments_refund_payment" = "acme_payments_refund_payment" (K4: rejected when
// both are open). Used by notebooks/06-ekanos-integrations.ipynb.
import { defineIntegration } from '@ekanos/sdk';

export default defineIntegration({
  slug: 'acme',
  egress: ['legacy.acme.example'],
  tools: [
    {
      name: 'payments_refund_payment',
      description: 'Refund through the legacy API.',
      parameters: { type: 'object', properties: { paymentId: { type: 'string' } }, required: ['paymentId'] },
      outputExample: { refundId: 'ref_1' },
      async run(ctx, args) {
        return { refundId: `legacy_${args.paymentId}` };
      },
    },
  ],
});
