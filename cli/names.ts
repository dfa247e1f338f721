/**
 * Names for the addresses a command prints: the verifier Safe's owners as verifier1, verifier2, … (as npm start,
 * the dashboard and the key files name them), and providers by the name they registered. A registered name is
 * chosen by its provider, so it is used only where it cannot mislead: never over a verifier's name, and not at all
 * when two of the addresses asked about registered the same name, nor one that reads as an address or a verifier's
 * name (the address then stands alone).
 */
import { verifierNamesOn } from "../sdk/safeOwners.ts";
import type { CommandContext } from "./context.ts";

export async function namesFor(ctx: CommandContext, addresses: string[]): Promise<Record<string, string>> {
  const names = await verifierNamesOn(ctx.provider, ctx.deployment.verifierSafe);
  const taken = new Set(Object.values(names));
  const asked = [...new Set(addresses.map((a) => a.toLowerCase()))].filter((a) => names[a] === undefined);
  const offers = await Promise.all(asked.map((a) => ctx.protocol.registry.providerOf(a)));
  const registered = asked.map((a, i) => [a, offers[i].registeredAt > 0n ? offers[i].name : ""] as const);
  const count = new Map<string, number>();
  for (const [, n] of registered) if (n) count.set(n, (count.get(n) ?? 0) + 1);
  for (const [a, n] of registered) if (n && count.get(n) === 1 && !taken.has(n) && !misleads(n)) names[a] = n;
  return names;
}

/** A registered name that reads as something else: an address, or a verifier's name. */
const misleads = (name: string): boolean => /^0x[0-9a-f]{40}$/i.test(name) || /^verifier\d+$/i.test(name);
