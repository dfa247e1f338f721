/**
 * The coordinator's memory of heartbeats: the latest beat per provider and per (job, epoch, provider), stamped
 * with the coordinator's own clock on arrival (so a provider's clock skew never decides liveness). Lost on a
 * restart by design: agents beat every second, and every Running job gets a fresh timeout when first seen.
 */
import { getAddress } from "ethers";
import { checkHeartbeat, type SignedHeartbeat } from "../../sdk/heartbeat.ts";
import type { JsonResponse } from "../http.ts";
import { jobBeatKey, type BeatRecord } from "./decide.ts";

export class HeartbeatBook {
  readonly lastBeat = new Map<string, BeatRecord>();
  readonly lastJobBeat = new Map<string, number>();
  private readonly lastSentAt = new Map<string, number>();
  private readonly chainId: string;
  private readonly maxClockSkewMs: number;

  constructor(chainId: bigint | string, maxClockSkewMs: number) {
    this.chainId = chainId.toString();
    this.maxClockSkewMs = maxClockSkewMs;
  }

  /** Checks and records one beat received at `nowMs`. */
  receive(body: unknown, nowMs: number): { ok: true; provider: string } | { ok: false; reason: string } {
    const shape = parseHeartbeat(body);
    if (typeof shape === "string") return { ok: false, reason: shape };
    const h = shape;
    const provider = h.provider.toLowerCase();
    const check = checkHeartbeat(h, this.chainId, nowMs, this.lastSentAt.get(provider), this.maxClockSkewMs);
    if (!check.ok) return check;
    this.lastSentAt.set(provider, h.sentAt);
    this.lastBeat.set(provider, { receivedAt: nowMs, jobId: h.jobId, epoch: h.epoch, profile: h.profile });
    if (h.jobId !== "0") this.lastJobBeat.set(jobBeatKey(h.jobId, h.epoch, provider), nowMs);
    return { ok: true, provider: h.provider };
  }

  /** Forgets beats older than `horizonMs` (keeps memory bounded on a long run). */
  prune(nowMs: number, horizonMs: number): void {
    for (const [k, t] of this.lastJobBeat) if (nowMs - t > horizonMs) this.lastJobBeat.delete(k);
    for (const [k, b] of this.lastBeat) {
      if (nowMs - b.receivedAt > horizonMs) {
        this.lastBeat.delete(k);
        this.lastSentAt.delete(k);
      }
    }
  }

  /** The HTTP handler for `POST /heartbeat`: 200 `{ ok: true }` or 400 `{ ok: false, reason }`. */
  handler(now: () => number) {
    return (body: unknown): JsonResponse => {
      const r = this.receive(body, now());
      return r.ok ? { status: 200, body: { ok: true } } : { status: 400, body: { ok: false, reason: r.reason } };
    };
  }
}

const DECIMAL = /^\d{1,78}$/;
const PROFILE = /^[\x21-\x7e]{1,120}$/;

/** The SignedHeartbeat in `body`, or why it is not one. */
export function parseHeartbeat(body: unknown): SignedHeartbeat | string {
  if (!body || typeof body !== "object") return "body must be a JSON object";
  const b = body as Record<string, unknown>;
  for (const k of ["chainId", "provider", "jobId", "epoch", "signature"]) {
    if (typeof b[k] !== "string") return `${k} must be a string`;
  }
  if (typeof b.sentAt !== "number" || !Number.isSafeInteger(b.sentAt)) return "sentAt must be an integer (ms)";
  if (typeof b.step !== "number" || !Number.isSafeInteger(b.step) || b.step < 0) return "step must be an integer ≥ 0";
  for (const k of ["chainId", "jobId", "epoch"]) if (!DECIMAL.test(b[k] as string)) return `${k} must be a decimal string`;
  if (b.profile !== undefined && (typeof b.profile !== "string" || !PROFILE.test(b.profile))) {
    return "profile must be a short printable string";
  }
  try {
    getAddress(b.provider as string);
  } catch {
    return "provider is not an address";
  }
  return b as unknown as SignedHeartbeat;
}
