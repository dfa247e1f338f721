// Content-addressed blob store for checkpoints and state blobs. The file-system store is the
// default; an S3-compatible store only has to implement the same three methods.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { blobHash } from "./checkpoint.ts";
import { HashMismatchError, NotFoundError } from "./errors.ts";
import { decodeState, encodeState } from "./state.ts";
import type { TrainingState } from "./types.ts";

export interface CheckpointStore {
  /** Stores bytes; returns their blobHash (0x sha256). Idempotent. */
  put(bytes: Uint8Array): Promise<string>;
  /** Returns the bytes whose blobHash is `hash`; NotFoundError / HashMismatchError otherwise. */
  get(hash: string): Promise<Uint8Array>;
  has(hash: string): Promise<boolean>;
}

const HASH_RE = /^0x[0-9a-f]{64}$/;

function normalize(hash: string): string {
  const h = hash.toLowerCase();
  if (!HASH_RE.test(h)) throw new TypeError(`expected 0x-prefixed sha256 hex, got ${hash}`);
  return h;
}

export class FsCheckpointStore implements CheckpointStore {
  dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  private path(hash: string): string {
    return join(this.dir, `${normalize(hash).slice(2)}.blob`);
  }

  async put(bytes: Uint8Array): Promise<string> {
    const hash = blobHash(bytes);
    const dest = this.path(hash);
    if (await this.has(hash)) return hash;
    await mkdir(this.dir, { recursive: true });
    // Write to a unique temp name, then rename: readers never see a partial blob.
    const tmp = `${dest}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await writeFile(tmp, bytes, { flag: "wx" });
      await rename(tmp, dest);
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
    return hash;
  }

  async get(hash: string): Promise<Uint8Array> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.path(hash));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new NotFoundError(hash);
      throw e;
    }
    const actual = blobHash(bytes);
    if (actual !== normalize(hash)) throw new HashMismatchError(normalize(hash), actual);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  async has(hash: string): Promise<boolean> {
    try {
      await stat(this.path(hash));
      return true;
    } catch {
      return false;
    }
  }
}

/** Saves a state blob; its store hash equals stateHash(state). */
export function putState(store: CheckpointStore, s: TrainingState): Promise<string> {
  return store.put(encodeState(s));
}

/** Fetches and decodes the state blob with hash `hash` (verified by the store). */
export async function getState(store: CheckpointStore, hash: string): Promise<TrainingState> {
  return decodeState(await store.get(hash));
}
