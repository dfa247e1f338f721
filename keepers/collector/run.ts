/** Runs the verdict collector: restores saved signatures, serves `POST /signatures`, ticks until stopped. */
import type { Logger } from "../../sdk/log.ts";
import type { KeeperContext } from "../chain.ts";
import { startJsonServer } from "../http.ts";
import { runLoop } from "../runner.ts";
import { createCollector, type CollectorDeps } from "./collector.ts";
import { pendingView } from "./pendingView.ts";
import type { CollectorConfig } from "./config.ts";

export async function runCollector(
  ctx: KeeperContext,
  config: CollectorConfig,
  deps: CollectorDeps,
  signal: AbortSignal,
  logger: Logger = ctx.logger,
): Promise<number> {
  const collector = createCollector(ctx, config, deps);
  await collector.restore();
  const server = await startJsonServer({
    host: config.host,
    port: config.port,
    logger,
    routes: {
      "POST /signatures": collector.submit,
      "GET /health": () => ({ status: 200, body: { ok: true, pending: collector.pool.size } }),
      "GET /pending": () => pendingView(collector.pool), // read-only, for dashboards
    },
  });
  try {
    return await runLoop({
      name: "collector",
      tick: async () => {
        await collector.tick();
      },
      intervalMs: config.intervalMs,
      once: config.once,
      signal,
      logger,
    });
  } finally {
    await server.close();
    await collector.idle();
  }
}
