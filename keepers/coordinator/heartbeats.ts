/**
 * The coordinator's memory of heartbeats: the latest beat per provider and per (job, epoch, provider), stamped
 * with the coordinator's own clock on arrival (so a provider's clock skew never decides liveness). Lost on a
 * restart by design: agents beat every second, and every Running job gets a fresh timeout when first seen.
 *
 * Other hosts reach this endpoint, so a beat counts only if it names this chain and this escrow, is signed by its
 * provider, comes from a registered provider, and is newer than that provider's last one. Memory is bounded per
 * sender: at most MAX_JOB_BEATS_PER_PROVIDER (job, epoch) entries each, and only registered senders get any.
 */
import { getAddress } from "ethers";
import { checkHeartbeat, type HeartbeatScope, type SignedHeartbeat } from "../../sdk/rules/heartbeat.ts";
import type { JsonResponse } from "../http.ts";
import { jobBeatKey, type BeatRecord, type StepSeen } from "./decide.ts";

export const MAX_JOB_BEATS_PER_PROVIDER = 8;

/** Whether `address` (checksummed) is a registered provider; may read the chain. */
/** true: registered; false: not; undefined: cannot tell now (the read failed or was capped). */
export type RegistryCheck = (address: string) => Promise<boolean | undefined> | boolean | undefined;

export type BeatOutcome = { ok: true; provider: string } | { ok: false; status: 400 | 403 | 503; reason: string };

export class HeartbeatBook {
  readonly lastBeat = new Map<string, BeatRecord>();
  readonly lastJobBeat = new Map<string, number>();
  /** Highest step beaten per (job, epoch, provider) and when it was first beaten: the progress rule's input. */
  readonly jobSteps = new Map<string, StepSeen>();
  /** Machine identity of each provider's latest beat (badges). */
  readonly machines = new Map<string, string>();
  private readonly lastSentAt = new Map<string, number>();
  private readonly jobKeys = new Map<string, string[]>();
  private readonly scope: HeartbeatScope;
  private readonly maxClockSkewMs: number;
  private readonly isRegistered: RegistryCheck;

  constructor(scope: HeartbeatScope, maxClockSkewMs: number, isRegistered: RegistryCheck) {
    this.scope = { chainId: scope.chainId.toString(), escrow: scope.escrow };
    this.maxClockSkewMs = maxClockSkewMs;
    this.isRegistered = isRegistered;
  }

  /** Checks and records one beat received at `nowMs`. */
  async receive(body: unknown, nowMs: number): Promise<BeatOutcome> {
    const shape = parseHeartbeat(body);
    if (typeof shape === "string") return { ok: false, status: 400, reason: shape };
    const h = shape;
    const provider = h.provider.toLowerCase();
    const check = checkHeartbeat(h, this.scope, nowMs, this.lastSentAt.get(provider), this.maxClockSkewMs);
    if (!check.ok) return { ok: false, status: 400, reason: check.reason };
    // After the signature check, so forged beats never cost a registry read.
    const registered = await this.isRegistered(getAddress(h.provider));
    if (registered === undefined) {
      // A failed (or capped) registry read is no answer: "cannot tell now", never "not registered".
      return { ok: false, status: 503, reason: `cannot tell now whether ${h.provider} is registered; beat again` };
    }
    if (!registered) return { ok: false, status: 403, reason: `${h.provider} is not a registered provider` };
    // Re-checked after the await: a concurrent beat from the same sender may have landed meanwhile.
    const prev = this.lastSentAt.get(provider);
    if (prev !== undefined && h.sentAt <= prev) return { ok: false, status: 400, reason: "replayed heartbeat" };
    this.lastSentAt.set(provider, h.sentAt);
    this.lastBeat.set(provider, { receivedAt: nowMs, jobId: h.jobId, epoch: h.epoch, profile: h.profile });
    this.machines.set(provider, h.machine);
    if (h.jobId !== "0") this.recordJobBeat(provider, jobBeatKey(h.jobId, h.epoch, provider), nowMs, h.step);
    return { ok: true, provider: h.provider };
  }

  /** Keeps the newest few (job, epoch) entries per provider: a sender cycling job ids cannot grow the map. */
  private recordJobBeat(provider: string, key: string, nowMs: number, step: number): void {
    const keys = (this.jobKeys.get(provider) ?? []).filter((k) => k !== key);
    keys.push(key);
    while (keys.length > MAX_JOB_BEATS_PER_PROVIDER) this.forgetJobBeat(keys.shift()!);
    this.jobKeys.set(provider, keys);
    this.lastJobBeat.set(key, nowMs);
    // Only a higher step is progress: repeating (or lowering) a step keeps the time it was first shown.
    const seen = this.jobSteps.get(key);
    if (!seen || step > seen.step) this.jobSteps.set(key, { step, at: nowMs });
  }

  private forgetJobBeat(key: string): void {
    this.lastJobBeat.delete(key);
    this.jobSteps.delete(key);
  }

  /** Forgets beats older than `horizonMs` (keeps memory bounded on a long run). */
  prune(nowMs: number, horizonMs: number): void {
    for (const [k, t] of this.lastJobBeat) if (nowMs - t > horizonMs) this.forgetJobBeat(k);
    for (const [p, keys] of this.jobKeys) {
      const live = keys.filter((k) => this.lastJobBeat.has(k));
      if (live.length) this.jobKeys.set(p, live);
      else this.jobKeys.delete(p);
    }
    for (const [k, b] of this.lastBeat) {
      if (nowMs - b.receivedAt > horizonMs) {
        this.lastBeat.delete(k);
        this.lastSentAt.delete(k);
        this.machines.delete(k);
      }
    }
  }

  /** The HTTP handler for `POST /heartbeat`: 200 `{ ok: true }`, or 400/403 `{ ok: false, reason }`. */
  handler(now: () => number) {
    return async (body: unknown): Promise<JsonResponse> => {
      const r = await this.receive(body, now());
      return r.ok ? { status: 200, body: { ok: true } } : { status: r.status, body: { ok: false, reason: r.reason } };
    };
  }
}

const DECIMAL = /^\d{1,78}$/;
const UINT256_MAX = (1n << 256n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;
const HEX_ID = /^0x[0-9a-f]{1,64}$/i;
const SIGNATURE = /^0x[0-9a-f]{130}$/i;
const PROFILE = /^[\x21-\x7e]{1,120}$/;
const PROBLEM = /^[\x20-\x7e]{1,200}$/;

/** The SignedHeartbeat in `body`, or why it is not one (every number in range of its on-chain type). */
export function parseHeartbeat(body: unknown): SignedHeartbeat | string {
  if (!body || typeof body !== "object" || Array.isArray(body)) return "body must be a JSON object";
  const b = body as Record<string, unknown>;
  for (const k of ["chainId", "escrow", "provider", "jobId", "epoch", "signature", "machine"]) {
    if (typeof b[k] !== "string") return `${k} must be a string`;
  }
  if (typeof b.sentAt !== "number" || !Number.isSafeInteger(b.sentAt) || b.sentAt < 0)
    return "sentAt must be an integer (ms)";
  if (typeof b.step !== "number" || !Number.isSafeInteger(b.step) || b.step < 0 || b.step > 0xffffffff) {
    return "step must be an integer in 0..2^32-1";
  }
  for (const k of ["chainId", "jobId", "epoch"])
    if (!DECIMAL.test(b[k] as string)) return `${k} must be a decimal string`;
  if (BigInt(b.chainId as string) > UINT256_MAX || BigInt(b.jobId as string) > UINT256_MAX)
    return "chainId/jobId out of range";
  if (BigInt(b.epoch as string) > UINT64_MAX) return "epoch out of range (uint64)";
  for (const k of ["loss", "stepsPerSecond"]) {
    if (b[k] !== undefined && (typeof b[k] !== "number" || !Number.isFinite(b[k])))
      return `${k} must be a finite number`;
  }
  if (b.profile !== undefined && (typeof b.profile !== "string" || !PROFILE.test(b.profile))) {
    return "profile must be a short printable string";
  }
  if (b.problem !== undefined && (typeof b.problem !== "string" || !PROBLEM.test(b.problem))) {
    return "problem must be printable text of at most 200 characters";
  }
  if (!HEX_ID.test(b.machine as string)) return "machine must be hex (sdk/run/machine.ts)";
  if (!SIGNATURE.test(b.signature as string)) return "signature must be 65 bytes of hex";
  for (const k of ["provider", "escrow"]) {
    try {
      getAddress(b[k] as string);
    } catch {
      return `${k} is not an address`;
    }
  }
  return b as unknown as SignedHeartbeat;
}
