/**
 * Where a verifier learns a provider's arithmetic profile: the coordinator's `GET /heartbeats`, which lists each
 * provider's latest beat that the coordinator accepted (signed by the provider, profile included). Only used to
 * decide whether a replay mismatch is evidence (verifier/claims.ts); a profile that cannot be read makes no claim.
 */
import type { ProfileSource } from "./claims.ts";

export const DEFAULT_COORDINATOR_URL = "http://127.0.0.1:8600";

/** Reads `${baseUrl}/heartbeats`; undefined when the coordinator is unreachable or lists no profile. */
export function coordinatorProfiles(baseUrl: string, timeoutMs = 5_000): ProfileSource {
  const url = new URL("/heartbeats", baseUrl).toString();
  return {
    async profileOf(provider) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
        if (!res.ok) return undefined;
        const data = (await res.json()) as { beats?: { provider?: string; profile?: unknown }[] };
        const beat = data.beats?.find((b) => String(b.provider).toLowerCase() === provider.toLowerCase());
        return typeof beat?.profile === "string" ? beat.profile : undefined;
      } catch {
        return undefined; // not knowing the profile only means no claim is made
      }
    },
  };
}
