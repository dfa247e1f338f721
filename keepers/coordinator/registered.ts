/**
 * Is a heartbeat's sender a registered provider? Known ones come from the coordinator's ProviderRegistered scan;
 * an unknown sender costs one registry read, and a "no" is remembered briefly (bounded), so a flood of beats from
 * unregistered keys costs neither memory nor a chain read per beat. Reads for unknown senders are also capped per
 * second (before, a signed beat from a fresh key every time cost one read each): past the cap the answer is "cannot
 * tell now" (undefined: the beat is answered 503, not "not registered"), as is a registry read that failed; a provider
 * registered before the coordinator's scan is found a second later, when it beats again.
 */
import type { KeeperContext } from "../chain.ts";

const NEGATIVE_TTL_MS = 5_000;
const MAX_NEGATIVE = 1_024;
/** Registry reads for unknown senders per second, at most (a restarted coordinator meets its old providers). */
export const MAX_UNKNOWN_READS_PER_SECOND = 10;

export function registryCheck(ctx: KeeperContext, known: Set<string>) {
  const refused = new Map<string, number>();
  const found = new Set<string>(); // registered ones read here (registration is never undone): one read each
  let windowStart = -Infinity;
  let readsInWindow = 0;
  return async (address: string): Promise<boolean | undefined> => {
    if (known.has(address) || found.has(address)) return true;
    const now = ctx.nowMs();
    const at = refused.get(address);
    if (at !== undefined && now - at < NEGATIVE_TTL_MS) return false;
    if (now - windowStart >= 1_000) [windowStart, readsInWindow] = [now, 0];
    if (readsInWindow >= MAX_UNKNOWN_READS_PER_SECOND) return undefined; // cannot tell now; it beats again in a second
    readsInWindow++;
    let registered: boolean;
    try {
      const [price] = await ctx.registry.quote(address);
      registered = price > 0n; // registration requires a price above zero
    } catch {
      return undefined; // cannot tell now (a failed read is no "no"); the agent beats again in a second
    }
    if (registered) {
      refused.delete(address);
      found.add(address);
      return true;
    }
    if (refused.size >= MAX_NEGATIVE) refused.clear();
    refused.set(address, ctx.nowMs());
    return false;
  };
}
