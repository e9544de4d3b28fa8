/** Slack replies as a worker part: every worker process posts the results of captures asked for in Slack. */
import type { ServiceContext } from '@heapcap/service';
import { deliveryFromConfig, type SlackDelivery } from '@heapcap/slack';

/** Start delivering Slack replies in `ctx`; registers its close (waiting jobs go back to the queue). */
export async function startSlackDeliveryPart(ctx: ServiceContext): Promise<SlackDelivery> {
  const delivery = deliveryFromConfig(ctx.config, ctx.queue, ctx.store, ctx.log.child({ component: 'slack' }));
  ctx.onClose({ name: 'slack delivery', close: () => delivery.close(), timeoutMs: 15_000 });
  await delivery.start();
  return delivery;
}
