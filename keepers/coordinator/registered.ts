/**
 * Is a heartbeat's sender a registered provider? Known ones come from the coordinator's ProviderRegistered scan;
 * an unknown sender costs one registry read, and a "no" is remembered briefly (bounded), so a flood of beats from
 * unregistered keys costs neither memory nor a chain read per beat.
 */
import type { KeeperContext } from "../chain.ts";

const NEGATIVE_TTL_MS = 5_000;
const MAX_NEGATIVE = 1_024;

export function registryCheck(ctx: KeeperContext, known: Set<string>) {
  const refused = new Map<string, number>();
  return async (address: string): Promise<boolean> => {
    if (known.has(address)) return true;
    const at = refused.get(address);
    if (at !== undefined && ctx.nowMs() - at < NEGATIVE_TTL_MS) return false;
    let registered: boolean;
    try {
      const [price] = await ctx.registry.quote(address);
      registered = price > 0n; // registration requires a price above zero
    } catch {
      return false; // cannot tell now; the agent beats again in a second
    }
    if (registered) {
      refused.delete(address);
      return true;
    }
    if (refused.size >= MAX_NEGATIVE) refused.clear();
    refused.set(address, ctx.nowMs());
    return false;
  };
}
