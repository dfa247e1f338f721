/**
 * The worst delay one malicious verifier (one Safe owner of three) can put on an honest 2-of-3 accept: the real
 * collector behind its HTTP routes (test/adversary/collectorHost.ts) at the CLI defaults (--claim-hold-ms 120000,
 * --quorum-wait-ms 15000), on the simulated chain with the real Safe, on a manual clock stepped one second at a time
 * after the honest pair has signed; each strategy on its own checkpoint:
 * - silent: the third owner says nothing (the quorum wait);
 * - early-claim: its own fault claim at once, then a refusal naming a fresh finder every 10 s (the old freeze);
 * - late-claim: its own claim one second before the quorum wait ends, then the same spoofs;
 * - refuse: it signs "refuse" (the opposite decision) at once, then a late claim.
 * Prints `malicious_verifier_delay_seconds_<strategy>` (clock seconds from the honest threshold to the accept on
 * chain) and their maximum `malicious_verifier_delay_seconds_max`; the bound in docs/THREATS.md is
 * max(claim hold, quorum wait) = 120 s plus one collector tick (here a tick per clock second).
 * Run alone: `node bench/verifierDelay.ts`.
 */
import { Wallet } from "ethers";
import { load, manualClock, type Protocol } from "../test/keepers/fixture.ts";
import {
  acceptBody,
  accepted,
  faultBody,
  faultOf,
  Host,
  reported,
  V1,
  V2,
  V3,
  type Checkpoint,
} from "../test/adversary/collectorHost.ts";
import { DEFAULT_CLAIM_HOLD_MS } from "../keepers/collector/tick.ts";

const QUORUM_WAIT_MS = 15_000; // the CLI default (keepers/collector/config.ts)
const LIMIT_S = 600;

/** What the malicious owner does at clock second `s` after the honest threshold. */
type Strategy = (p: Protocol, host: Host, c: Checkpoint, s: number) => Promise<void>;

const spoofEvery10s: Strategy = async (p, host, c, s) => {
  if (s > 0 && s % 10 === 0)
    await host.post("/claims", await faultBody(p, V1, c, faultOf(c, Wallet.createRandom().address)));
};
const claimAt =
  (at: number): Strategy =>
  async (p, host, c, s) => {
    if (s === at) await host.post("/claims", await faultBody(p, V1, c, faultOf(c, V1.address)));
    if (s > at) await spoofEvery10s(p, host, c, s);
  };
const STRATEGIES: Record<string, Strategy> = {
  silent: async () => {},
  early_claim: claimAt(0),
  late_claim: claimAt(QUORUM_WAIT_MS / 1000 - 1),
  refuse: async (p, host, c, s) => {
    if (s === 0) await host.post("/signatures", await acceptBody(p, V1, c, false));
    await claimAt(QUORUM_WAIT_MS / 1000 - 1)(p, host, c, s);
  },
};

/** Clock seconds from the honest pair's signatures to the accept landing on chain, under `strategy`. */
async function delayUnder(strategy: Strategy): Promise<number> {
  const p = await load();
  const c = await reported(p);
  const clock = manualClock();
  const host = await Host.start(p, { clock, claimHoldMs: DEFAULT_CLAIM_HOLD_MS, quorumWaitMs: QUORUM_WAIT_MS });
  try {
    const t0 = clock.now();
    for (const w of [V2, V3]) await host.post("/signatures", await acceptBody(p, w, c));
    for (let s = 0; s <= LIMIT_S; s++) {
      clock.set(t0 + s * 1000);
      await strategy(p, host, c, s);
      await host.tick();
      if (await accepted(p, c)) return s;
    }
    return Infinity;
  } finally {
    await host.stop();
  }
}

export async function benchVerifierDelay(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [name, strategy] of Object.entries(STRATEGIES))
    out[`malicious_verifier_delay_seconds_${name}`] = await delayUnder(strategy);
  out.malicious_verifier_delay_seconds_max = Math.max(...Object.values(out));
  out.malicious_verifier_delay_bound_seconds = Math.max(DEFAULT_CLAIM_HOLD_MS, QUORUM_WAIT_MS) / 1000;
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchVerifierDelay())) console.log(`${k}: ${v}`);
  process.exit(0);
}
