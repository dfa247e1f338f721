// Content-addressed blob store for checkpoints and state blobs, named by URL (file://DIR, s3://BUCKET/PREFIX or a
// plain folder). The layers live in store/: backends (fs.ts, s3.ts), the verified store over them (verified.ts),
// URL parsing (url.ts) and the embedded S3 server (embedded.ts).
import { FsBackend } from "./store/fs.ts";
import { BlobStore, type CheckpointStore, type StoreOptions } from "./store/verified.ts";
import { decodeState, encodeState } from "./state.ts";
import type { TrainingState } from "./types.ts";

export type { CheckpointStore, StoreEvent, StoreOptions, RetryPolicy } from "./store/verified.ts";
export { BlobStore, DEFAULT_RETRY, backoffMs } from "./store/verified.ts";
export type { BlobBackend } from "./store/backend.ts";
export { ShortReadError } from "./store/backend.ts";
export { FsBackend } from "./store/fs.ts";
export { S3Backend, PART_BYTES } from "./store/s3.ts";
export { openStore, parseStoreUrl, s3OptionsFromEnv, StoreUrlError } from "./store/url.ts";
export { StoreConfigError, StoreCorruptionError, StoreUnavailableError } from "./store/errors.ts";

/** The store over a local folder (what a plain `--store DIR` opens). */
export class FsCheckpointStore extends BlobStore {
  readonly dir: string;
  constructor(dir: string, opts: StoreOptions = {}) {
    super(new FsBackend(dir), opts);
    this.dir = dir;
  }
}

/** Saves a state blob; its store hash equals stateHash(state). */
export function putState(store: CheckpointStore, s: TrainingState): Promise<string> {
  return store.put(encodeState(s));
}

/** Fetches and decodes the state blob with hash `hash` (verified by the store; at most `maxBytes` read). */
export async function getState(store: CheckpointStore, hash: string, maxBytes?: number): Promise<TrainingState> {
  return decodeState(await store.get(hash, maxBytes));
}
