// The raw byte layer under a verified store: named objects, no hashing, no retries. A backend throws on any
// failure to answer; a missing object is `null` / `false`, never an error.

export interface BlobBackend {
  /** Where the blobs live, for messages (file:///dir or s3://bucket/prefix). */
  readonly url: string;
  /**
   * The bytes under `name`, or null when nothing is stored there. UnreadableBlobError (an answer, not a failure)
   * when the object is no plain blob or holds more than `maxBytes`, found without reading its body.
   */
  read(name: string, maxBytes?: number): Promise<Uint8Array | null>;
  /** Stores `bytes` under `name`, replacing what was there; readers never see a partial object. */
  write(name: string, bytes: Uint8Array): Promise<void>;
  exists(name: string): Promise<boolean>;
  close?(): void;
}

/** A truncated or cut-off answer: fewer bytes than the store announced. Retried like any transient failure. */
export class ShortReadError extends Error {
  code = "SHORT_READ";
  constructor(name: string, got: number, announced: number) {
    super(`read of ${name} returned ${got} of ${announced} bytes`);
  }
}
