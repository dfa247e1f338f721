// S3-compatible backend (AWS S3, Cloudflare R2, MinIO, s3rver): one object per blob under `<prefix>/<hex>.blob`.
// Uploads above PART_BYTES go through lib-storage as multipart (a multi-GB state never sits in one request);
// reads stream the body and check its length against Content-Length (a cut-off body is a retryable failure).
// The SDK's own retries are off: the verified store above retries with its own bound and backoff. A failure for
// one key while the bucket answers for another (stored headers no client parses, an archived or customer-key
// object) is that blob's: UnreadableBlobError, not an outage (readFaults.ts).
import { randomBytes } from "node:crypto";
import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { ShortReadError, type BlobBackend } from "./backend.ts";
import { describe, StoreConfigError } from "./errors.ts";
import { blame, s3ReadFault } from "./readFaults.ts";
import { UnreadableBlobError } from "../errors.ts";

export const PART_BYTES = 8 * 1024 * 1024;

export type S3Location = { bucket: string; prefix: string };

export type S3Options = {
  /** e.g. http://127.0.0.1:4568 (MinIO, s3rver, R2's account endpoint); unset means AWS S3. */
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Socket idle timeout per request (a hung store is a failure, not a wait forever). */
  requestTimeoutMs?: number;
};

type SdkError = Error & { $metadata?: { httpStatusCode?: number }; Code?: string };

const statusOf = (e: unknown) => (e as SdkError).$metadata?.httpStatusCode;

/** 4xx other than timeout/throttling means the request itself is wrong (credentials, bucket): retrying is futile. */
function asConfigError(e: unknown, url: string): Error {
  const s = statusOf(e);
  if (s !== undefined && s >= 400 && s < 500 && s !== 408 && s !== 429) {
    return new StoreConfigError(
      `store ${url} rejected the request (HTTP ${s} ${(e as Error).name}): check bucket and credentials`,
    );
  }
  return e as Error;
}

export class S3Backend implements BlobBackend {
  readonly url: string;
  readonly client: S3Client;
  private loc: S3Location;

  constructor(loc: S3Location, opts: S3Options = {}) {
    this.loc = { bucket: loc.bucket, prefix: loc.prefix.replace(/^\/+|\/+$/g, "") };
    this.url = `s3://${this.loc.bucket}/${this.loc.prefix}`;
    const config: S3ClientConfig = {
      region: opts.region ?? "us-east-1",
      maxAttempts: 1,
      // Third-party servers neither need nor (s3rver) understand the SDK's default flexible checksums.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: {
        requestTimeout: opts.requestTimeoutMs ?? 10_000,
        connectionTimeout: 5_000,
        throwOnRequestTimeout: true,
      },
    };
    if (opts.endpoint) Object.assign(config, { endpoint: opts.endpoint, forcePathStyle: true });
    if (opts.credentials) config.credentials = opts.credentials;
    this.client = new S3Client(config);
  }

  private key(name: string): string {
    return this.loc.prefix ? `${this.loc.prefix}/${name}.blob` : `${name}.blob`;
  }

  /** Whether the bucket answers for a key nobody can have written (random): then a failure for one key is its own. */
  private async otherKeyAnswers(): Promise<boolean> {
    const probe = this.key(randomBytes(32).toString("hex"));
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.loc.bucket, Key: probe }));
      return true;
    } catch (e) {
      return s3ReadFault(e) === "missing";
    }
  }

  /** "missing" for a missing blob; UnreadableBlobError for a failure that is this key's alone; else the error. */
  private async judged(name: string, e: unknown): Promise<"missing"> {
    const fault = s3ReadFault(e);
    if (fault === "missing") return fault;
    if (fault === "this-name" && blame(fault, await this.otherKeyAnswers()) === "this-name")
      throw new UnreadableBlobError(name, `the store answers for other keys, not this one: ${describe(e)}`);
    throw asConfigError(e, this.url);
  }

  async read(name: string, maxBytes = Infinity): Promise<Uint8Array | null> {
    let out;
    try {
      out = await this.client.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: this.key(name) }));
    } catch (e) {
      await this.judged(name, e);
      return null;
    }
    const announced = out.ContentLength ?? -1;
    if (announced > maxBytes) {
      (out.Body as { destroy?: () => void } | undefined)?.destroy?.(); // never download a body past the bound
      throw new UnreadableBlobError(name, `${announced} bytes, more than ${maxBytes}`);
    }
    const chunks: Uint8Array[] = [];
    let got = 0;
    for await (const chunk of out.Body as AsyncIterable<Uint8Array>) {
      chunks.push(chunk);
      got += chunk.byteLength;
      if (got > maxBytes) {
        (out.Body as { destroy?: () => void }).destroy?.();
        throw new UnreadableBlobError(name, `more than ${maxBytes} bytes`);
      }
    }
    if (announced >= 0 && got !== announced) throw new ShortReadError(name, got, announced);
    return new Uint8Array(Buffer.concat(chunks, got));
  }

  async write(name: string, bytes: Uint8Array): Promise<void> {
    const params = { Bucket: this.loc.bucket, Key: this.key(name), ContentType: "application/octet-stream" };
    if (bytes.byteLength <= PART_BYTES) {
      // One request: lib-storage's bookkeeping only pays off once there are parts to send in parallel.
      try {
        await this.client.send(new PutObjectCommand({ ...params, Body: bytes, ContentLength: bytes.byteLength }));
      } catch (e) {
        throw asConfigError(e, this.url);
      }
      return;
    }
    const upload = new Upload({
      client: this.client,
      params: { ...params, Body: bytes },
      partSize: PART_BYTES,
      queueSize: 4,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (e) {
      throw asConfigError(e, this.url);
    }
  }

  /** True also for a key whose object cannot be read (a put then replaces it). */
  async exists(name: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.loc.bucket, Key: this.key(name) }));
      return true;
    } catch (e) {
      return this.judged(name, e).then(
        () => false,
        (err: unknown) => {
          if (err instanceof UnreadableBlobError) return true;
          throw err;
        },
      );
    }
  }

  close(): void {
    this.client.destroy();
  }
}
