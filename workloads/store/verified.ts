// The checkpoint store every part uses, over any backend: content-addressed by sha256, every read verified,
// transient failures retried with exponential backoff up to a bound, and a put that checks what is already under
// the name. Other bytes there (a squatter who computed an honest provider's next name) are replaced by the right
// ones and reported; a put never skips its write because the name is taken, and never blames its writer.
import { blobHash } from "../checkpoint.ts";
import { HashMismatchError, NotFoundError, UnreadableBlobError } from "../errors.ts";
import type { BlobBackend } from "./backend.ts";
import { StoreConfigError, StoreCorruptionError, StoreUnavailableError, describe } from "./errors.ts";

export interface CheckpointStore {
  /** Stores bytes; returns their blobHash (0x sha256). Idempotent; repairs a name holding other bytes. */
  put(bytes: Uint8Array): Promise<string>;
  /**
   * The bytes whose blobHash is `hash`; NotFoundError, HashMismatchError, UnreadableBlobError (no plain blob there,
   * or more than `maxBytes`) or StoreUnavailableError otherwise.
   */
  get(hash: string, maxBytes?: number): Promise<Uint8Array>;
  /** Whether `hash` names a stored blob; StoreUnavailableError when the store cannot tell. */
  has(hash: string): Promise<boolean>;
}

/** Attempts per operation, the backoff between them, and how long one attempt may take before it counts as failed. */
export type RetryPolicy = { attempts: number; baseDelayMs: number; maxDelayMs: number; opTimeoutMs: number };
export const DEFAULT_RETRY: RetryPolicy = { attempts: 6, baseDelayMs: 100, maxDelayMs: 2_000, opTimeoutMs: 60_000 };

export type StoreEvent =
  | { kind: "retry"; op: string; name: string; attempt: number; error: string }
  | { kind: "repaired"; name: string; found: string };

export type StoreOptions = { retry?: Partial<RetryPolicy>; onEvent?: (e: StoreEvent) => void };

/** Reads of a blob whose bytes do not match its name before that is taken as its content. */
const VERIFY_READS = 3;
const HASH_RE = /^0x[0-9a-f]{64}$/;

export function nameOf(hash: string): string {
  const h = hash.toLowerCase();
  if (!HASH_RE.test(h)) throw new TypeError(`expected 0x-prefixed sha256 hex, got ${hash}`);
  return h.slice(2);
}

/** Delay before retry `attempt` (1-based): exponential, capped, with jitter so many clients do not retry in step. */
export function backoffMs(p: RetryPolicy, attempt: number): number {
  const d = Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));
  return d / 2 + Math.random() * (d / 2);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class StoreTimeoutError extends Error {
  code = "ETIMEDOUT";
}

/** A hung backend (a stalled NFS mount, a server that accepts and never answers) fails after `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export class BlobStore implements CheckpointStore {
  readonly backend: BlobBackend;
  private policy: RetryPolicy;
  private onEvent: (e: StoreEvent) => void;

  constructor(backend: BlobBackend, opts: StoreOptions = {}) {
    this.backend = backend;
    this.policy = { ...DEFAULT_RETRY, ...opts.retry };
    this.onEvent = opts.onEvent ?? (() => {});
  }

  get url(): string {
    return this.backend.url;
  }

  /** Runs `fn` until it answers; past the bound (or on a misconfiguration) throws StoreUnavailableError. */
  private async retry<T>(op: string, name: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeout(fn(), this.policy.opTimeoutMs, `${op} ${name}`);
      } catch (err) {
        if (err instanceof UnreadableBlobError) throw err; // an answer about the content: retrying changes nothing
        if (err instanceof StoreConfigError || attempt >= this.policy.attempts) {
          throw new StoreUnavailableError(this.url, `${op} ${name}`, err);
        }
        this.onEvent({ kind: "retry", op, name, attempt, error: describe(err) });
        await pause(backoffMs(this.policy, attempt));
      }
    }
  }

  async put(bytes: Uint8Array): Promise<string> {
    const hash = blobHash(bytes);
    const name = nameOf(hash);
    const found = await this.foundUnder(name, hash);
    if (found === "the same bytes") return hash;
    await this.retry("write", name, () => this.backend.write(name, bytes));
    if (found === undefined) return hash;
    // A squatted name: read back what we wrote, so a store that keeps the wrong bytes is reported, not trusted.
    const after = await this.retry("read", name, () => this.backend.read(name)).catch((e: unknown) => {
      if (e instanceof UnreadableBlobError) return null; // what the write was to replace is still there
      throw e;
    });
    if (!after || blobHash(after) !== hash)
      throw new StoreCorruptionError(this.url, name, `still holds other bytes (found ${found})`);
    this.onEvent({ kind: "repaired", name, found });
    return hash;
  }

  /**
   * What a put finds under `name`: nothing (undefined), the right bytes, or a description of what it must replace.
   * A name that cannot be read (an object no reader can parse, stored before the content gate stripped its
   * metadata, or past the gate), or whose existence check itself fails, is put again: the write is the test, and
   * the read-back after it tells whether the store keeps the right bytes. Before, such a name was the maker's dead
   * end: every put stopped at the failed check.
   */
  private async foundUnder(name: string, hash: string): Promise<string | undefined> {
    let there: Uint8Array | null;
    try {
      if (!(await this.retry("exists", name, () => this.backend.exists(name)))) return undefined;
      there = await this.retry("read", name, () => this.backend.read(name));
    } catch (e) {
      if (!(e instanceof UnreadableBlobError || e instanceof StoreUnavailableError)) throw e;
      return `an object that cannot be read (${describe(e)})`;
    }
    if (there && blobHash(there) === hash) return "the same bytes";
    return there ? `${there.byteLength} bytes hashing to ${blobHash(there)}` : "an object that vanished";
  }

  async get(hash: string, maxBytes?: number): Promise<Uint8Array> {
    const name = nameOf(hash);
    const want = hash.toLowerCase();
    // A mismatch may be a torn or cut-off answer: read again; only a mismatch on every attempt is the content.
    let actual = "";
    const reads = Math.min(VERIFY_READS, this.policy.attempts);
    for (let attempt = 1; attempt <= reads; attempt++) {
      const bytes = await this.retry("read", name, () => this.backend.read(name, maxBytes));
      if (!bytes) throw new NotFoundError(hash);
      actual = blobHash(bytes);
      if (actual === want) return bytes;
      if (attempt < reads) {
        this.onEvent({ kind: "retry", op: "verify", name, attempt, error: `content hashes to ${actual}` });
        await pause(backoffMs(this.policy, attempt));
      }
    }
    throw new HashMismatchError(want, actual);
  }

  has(hash: string): Promise<boolean> {
    const name = nameOf(hash);
    return this.retry("exists", name, () => this.backend.exists(name));
  }

  close(): void {
    this.backend.close?.();
  }
}
