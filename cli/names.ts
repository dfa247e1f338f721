/**
 * Names for the addresses a command prints: the verifier Safe's owners as verifier1, verifier2, … (as npm start,
 * the dashboard and the key files name them), the keys of a network `npm start` runs from this folder by their
 * files (the client, the owner, the arbiter, alice …: cli/liveNetwork.ts), and providers by the name they
 * registered. A registered name is chosen by its provider, so it is used only where it cannot mislead: never over
 * another name, and not at all when two of the addresses asked about registered the same name, nor one that reads
 * as an address or a verifier's name (the address then stands alone). `resolveName` goes the other way, for
 * `gpuchain wallet NAME`.
 */
import { getAddress, type Contract } from "ethers";
import { CommandError } from "../sdk/run/args.ts";
import { eventsFrom } from "../sdk/node/deployment.ts";
import { readLogsToHead } from "../sdk/node/logRange.ts";
import { verifierNamesOn } from "../sdk/node/safeOwners.ts";
import type { CommandContext } from "./context.ts";

export async function namesFor(ctx: CommandContext, addresses: string[]): Promise<Record<string, string>> {
  const names = await verifierNamesOn(ctx.provider, ctx.deployment.verifierSafe);
  for (const [name, address] of Object.entries(ctx.live?.names ?? {})) names[address.toLowerCase()] ??= name; // the Safe's own numbering first
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

/**
 * The address `name` stands for on this deployment: a verifier (verifierN, from the Safe), a key of the `npm start`
 * network this is (client, owner, arbiter, a provider's), else the one provider that registered that name. A name
 * two providers registered, or none, is a one-line error listing the names known.
 */
export async function resolveName(ctx: CommandContext, name: string): Promise<string> {
  return getAddress(await addressOfName(ctx, name));
}

async function addressOfName(ctx: CommandContext, name: string): Promise<string> {
  const verifiers = await verifierNamesOn(ctx.provider, ctx.deployment.verifierSafe);
  const verifier = Object.entries(verifiers).find(([, n]) => n === name);
  if (verifier) return verifier[0];
  const live = ctx.live?.names[name];
  if (live) return live;
  const registered = await registeredNames(ctx);
  const matches = registered.filter((r) => r.name === name);
  if (matches.length === 1 && !misleads(name)) return matches[0].address;
  if (matches.length > 1) {
    throw new CommandError(
      `${matches.length} providers registered the name "${name}" (${matches.map((m) => m.address).join(", ")}): ` +
        "give the address",
    );
  }
  const known = [
    ...Object.values(verifiers),
    ...Object.keys(ctx.live?.names ?? {}),
    ...registered.map((r) => r.name).filter((n) => n && !misleads(n)),
  ];
  const list = [...new Set(known)].sort().join(", ") || "none";
  throw new CommandError(`no wallet named "${name}" on escrow ${ctx.deployment.escrow}: names known here: ${list}`);
}

/** Every registered provider and the name it registers under now. */
async function registeredNames(ctx: CommandContext): Promise<{ address: string; name: string }[]> {
  const registry = ctx.protocol.registry as unknown as Contract;
  const topic = registry.interface.getEvent("ProviderRegistered")!.topicHash;
  const from = eventsFrom(undefined, ctx.deployment);
  const { logs } = await readLogsToHead(ctx.provider, { address: ctx.deployment.registry, topics: [topic] }, from);
  const addresses = [...new Set(logs.map((l) => registry.interface.parseLog(l)!.args.provider as string))];
  const offers = await Promise.all(addresses.map((a) => ctx.protocol.registry.providerOf(a)));
  return addresses.map((address, i) => ({ address, name: offers[i].registeredAt > 0n ? offers[i].name : "" }));
}
