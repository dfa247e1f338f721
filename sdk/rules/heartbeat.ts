/**
 * The off-chain heartbeat from a provider agent to the coordinator keeper (fast failure detection, seconds).
 * Transport: HTTP POST of one JSON `SignedHeartbeat` to `<coordinator>/heartbeat`. The provider signs it
 * (EIP-191) so nobody can keep a dead provider "alive" or make a live one look dead by replaying old beats.
 * The on-chain lease is the slow, trustless layer; this one only makes failover faster.
 */
import { Wallet, verifyMessage } from "ethers";

export interface Heartbeat {
  chainId: string;
  /** The escrow the provider works for: a beat for one deployment never counts for another on the same chain. */
  escrow: string;
  provider: string; // checksummed address
  jobId: string; // "0" when idle (alive and available)
  epoch: string; // the epoch the provider believes it holds ("0" when idle)
  step: number; // last trained step
  loss?: number;
  stepsPerSecond?: number;
  /** Arithmetic profile (workloads/profile.ts): onnxruntime version, execution provider, CPU family or gpu. */
  profile?: string;
  /**
   * What keeps the provider from working now, in its own words (agent/problems.ts: "checkpoint store unreachable:
   * …", "waiting for gas: …"); absent when nothing is in the way. Printable ASCII, at most 200 characters.
   */
  problem?: string;
  sentAt: number; // ms since epoch, provider's clock
  /** sdk/run/machine.ts machineId(): which machine the provider runs on (badges), signed like the rest. */
  machine: string;
}

export interface SignedHeartbeat extends Heartbeat {
  signature: string;
}

/**
 * startGraceMs: extra silence allowed before the first beat for a new (job, epoch), because a fresh assignee may
 * first load its template (data set and onnxruntime sessions) — seconds on a busy machine.
 */
/** One provider's latest accepted beat as the coordinator's `GET /heartbeats` lists it, with its age there. */
export interface HeartbeatListed {
  provider: string;
  jobId: string;
  epoch: string;
  step: number;
  loss: number | null;
  stepsPerSecond: number | null;
  /** The arithmetic profile the beat reported (signed with it), or null. */
  profile?: string | null;
  /** The provider's own last problem (signed with the beat), or null when it reported none. */
  problem?: string | null;
  /** The beat's machine identity (sdk/run/machine.ts, signed with the beat), or null: the dashboard's separate-machine badge. */
  machine?: string | null;
  ageMs: number;
}

/** One unassignment the coordinator sent and saw mined, with its own reason (its `GET /unassignments`). */
export interface UnassignNote {
  jobId: string;
  /** The epoch the provider held (the chain's epoch after the unassign is one more). */
  epoch: string;
  provider: string;
  /** The decision's reason: "no heartbeat for …", "no progress …", "on-chain lease lapsed …". */
  reason: string;
  at: number;
}

export const HEARTBEAT_DEFAULTS = { intervalMs: 1_000, timeoutMs: 5_000, startGraceMs: 20_000, maxClockSkewMs: 30_000 };

/**
 * The signed text; the profile and the problem are signed too when present (a beat without them signs as before).
 * The problem is written as "problem: TEXT": a profile has no space, so neither can be read as the other.
 */
export function heartbeatMessage(h: Heartbeat): string {
  const fields = [h.chainId, h.escrow.toLowerCase(), h.provider, h.jobId, h.epoch, h.step, h.sentAt, h.machine];
  const all: (string | number)[] = ["gpuchain-heartbeat/v2", ...fields];
  if (h.profile !== undefined) all.push(h.profile);
  if (h.problem !== undefined) all.push(`problem: ${h.problem}`);
  return all.join("|");
}

/** What a beat must name to count here. */
export type HeartbeatScope = { chainId: string; escrow: string };

export async function signHeartbeat(wallet: Wallet, h: Heartbeat): Promise<SignedHeartbeat> {
  return { ...h, signature: await wallet.signMessage(heartbeatMessage(h)) };
}

export type HeartbeatCheck = { ok: true } | { ok: false; reason: string };

/** Pure check of one heartbeat against the coordinator's clock and the provider's previous beat. */
export function checkHeartbeat(
  h: SignedHeartbeat,
  expected: HeartbeatScope,
  nowMs: number,
  previousSentAt: number | undefined,
  maxClockSkewMs = HEARTBEAT_DEFAULTS.maxClockSkewMs,
): HeartbeatCheck {
  if (h.chainId !== expected.chainId) return { ok: false, reason: `wrong chain ${h.chainId}` };
  if (h.escrow.toLowerCase() !== expected.escrow.toLowerCase())
    return { ok: false, reason: `wrong escrow ${h.escrow}` };
  if (Math.abs(nowMs - h.sentAt) > maxClockSkewMs) return { ok: false, reason: "stale or future timestamp" };
  if (previousSentAt !== undefined && h.sentAt <= previousSentAt) return { ok: false, reason: "replayed heartbeat" };
  let signer: string;
  try {
    signer = verifyMessage(heartbeatMessage(h), h.signature);
  } catch {
    return { ok: false, reason: "malformed signature" };
  }
  if (signer.toLowerCase() !== h.provider.toLowerCase()) return { ok: false, reason: "signature not by provider" };
  return { ok: true };
}

/** A provider is live for a job while its last beat for that job and epoch is younger than `timeoutMs`. */
export function isLive(lastBeatAt: number | undefined, nowMs: number, timeoutMs: number): boolean {
  return lastBeatAt !== undefined && nowMs - lastBeatAt <= timeoutMs;
}
