// What one writer may add through the content gate, decided without I/O (gate.ts does the I/O). The gate already
// admits only bytes that hash to their names, so nothing it admits harms a blob; these bounds keep correct-but-junk
// writes from filling the store's disk: a write budget per writer, an expiry for uploads never completed, and a
// free-space floor below which writes are refused while reads go on (a full disk ended s3rver: it does not catch a
// write stream's error).

/** A writer's allowance: `bytes` and `objects` per `perMs`, refilled continuously (a token bucket). */
export type WriteBudget = { bytes: number; objects: number; perMs: number };

/**
 * 8 GiB and 50,000 objects an hour per writer: an honest provider puts about 4.5 MB (22 objects) per checkpoint of
 * 100 MNIST steps, so this is a checkpoint every 2 s for the hour, with room for larger templates; a junk writer at
 * loopback speed (94 MiB in 3.4 s before these bounds) stops after 8 GiB and then adds 2.3 MB/s at most.
 */
export const GATE_WRITE_BUDGET: WriteBudget = { bytes: 8 * 1024 ** 3, objects: 50_000, perMs: 3_600_000 };
/** An upload not completed within this is aborted and its parts (the gate's copies, the server's) removed. */
export const GATE_UPLOAD_TTL_MS = 15 * 60_000;
/**
 * Writes are refused while the store's disk would keep less than this free (256 MiB); reads go on. Enough for
 * s3rver's own metadata and the spool of writes in flight; small enough that a development machine or CI runner
 * with a nearly full disk still runs the embedded store.
 */
export const GATE_MIN_FREE_BYTES = 256 * 1024 ** 2;

/** What is left of one writer's allowance at `atMs`. */
export type Allowance = { bytes: number; objects: number; atMs: number };

export type Charge = { ok: true; left: Allowance } | { ok: false; retryAfterS: number; why: string };

/** The allowance at `nowMs`: `left` refilled for the time since it was taken, capped at the whole budget. */
function refilled(left: Allowance | undefined, nowMs: number, b: WriteBudget): Allowance {
  if (!left) return { bytes: b.bytes, objects: b.objects, atMs: nowMs };
  const share = Math.max(0, nowMs - left.atMs) / b.perMs;
  return {
    bytes: Math.min(b.bytes, left.bytes + share * b.bytes),
    objects: Math.min(b.objects, left.objects + share * b.objects),
    atMs: nowMs,
  };
}

/**
 * Takes a write of `bytes` that adds `objects` objects (1 for a PUT or a new upload, 0 for a part) from a writer's
 * allowance; refused when either would go below zero, with the seconds until it would not.
 */
export function chargeWrite(
  left: Allowance | undefined,
  nowMs: number,
  cost: { bytes: number; objects: number },
  b: WriteBudget,
): Charge {
  const now = refilled(left, nowMs, b);
  const shortBytes = cost.bytes - now.bytes;
  const shortObjects = cost.objects - now.objects;
  if (shortBytes <= 0 && shortObjects <= 0)
    return { ok: true, left: { ...now, bytes: now.bytes - cost.bytes, objects: now.objects - cost.objects } };
  if (cost.bytes > b.bytes)
    return { ok: false, retryAfterS: Infinity, why: `a write of ${cost.bytes} bytes is over the whole budget` };
  const waitMs = Math.max(shortBytes / b.bytes, shortObjects / b.objects) * b.perMs;
  return {
    ok: false,
    retryAfterS: Math.ceil(waitMs / 1000),
    why: `this writer added ${b.bytes} bytes or ${b.objects} objects within ${b.perMs / 1000} s`,
  };
}

/** Whether an upload created at `createdMs` is past its time at `nowMs`. */
export const uploadExpired = (createdMs: number, nowMs: number, ttlMs: number) => nowMs - createdMs >= ttlMs;

/**
 * Why a write of `incoming` bytes is refused on a disk with `freeBytes` free while `heldBytes` of other writes are
 * still on their way to it, or null when it may go on.
 */
export function diskRefusal(freeBytes: number, heldBytes: number, incoming: number, floor: number): string | null {
  const after = freeBytes - heldBytes - incoming;
  if (after >= floor) return null;
  return `the store's disk would keep ${after} bytes free, under its floor of ${floor}: writes wait for the operator to make room`;
}

/**
 * Who a write is charged to: the connection's address. s3rver checks no signature (any key id is anyone's to
 * claim), so a budget per access key id would be a fresh budget per invented id; the address is the one identity
 * the gate can trust (on `--hosts` each party has its own, on one host every writer shares one budget).
 */
export const writerOf = (remoteAddress: string | undefined) => remoteAddress ?? "unknown";
