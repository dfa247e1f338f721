// A store named by URL, the same way on every command: `file:///dir` (or a plain path) or `s3://bucket/prefix`.
// S3 settings come from the standard AWS variables, so one URL works against AWS S3, Cloudflare R2, MinIO or the
// embedded s3rver: AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY.
import { fileURLToPath } from "node:url";
import { FsBackend } from "./fs.ts";
import { S3Backend, type S3Options } from "./s3.ts";
import { BlobStore, type StoreOptions } from "./verified.ts";

export class StoreUrlError extends Error {}

export type ParsedStoreUrl = { kind: "file"; dir: string } | { kind: "s3"; bucket: string; prefix: string };

export function parseStoreUrl(spec: string): ParsedStoreUrl {
  if (!spec) throw new StoreUrlError("--store must name a store: file://DIR, s3://BUCKET/PREFIX or a folder");
  if (spec.startsWith("s3://")) {
    const u = new URL(spec);
    if (!u.hostname) throw new StoreUrlError(`store URL ${spec} names no bucket (expected s3://BUCKET/PREFIX)`);
    return { kind: "s3", bucket: u.hostname, prefix: decodeURIComponent(u.pathname).replace(/^\/+|\/+$/g, "") };
  }
  if (spec.startsWith("file://")) return { kind: "file", dir: fileURLToPath(spec) };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new StoreUrlError(`unsupported store URL ${spec} (expected file://DIR or s3://BUCKET/PREFIX)`);
  }
  return { kind: "file", dir: spec };
}

/** S3 client settings from the environment (explicit options win). */
export function s3OptionsFromEnv(env: NodeJS.ProcessEnv = process.env): S3Options {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || (endpoint ? "us-east-1" : undefined);
  const timeout = Number(env.GPUCHAIN_STORE_TIMEOUT_MS);
  return { endpoint, region, requestTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : undefined };
}

export function openStore(spec: string, opts: StoreOptions & { s3?: S3Options } = {}): BlobStore {
  const p = parseStoreUrl(spec);
  if (p.kind === "file") return new BlobStore(new FsBackend(p.dir), opts);
  const s3 = { ...s3OptionsFromEnv(), ...opts.s3 };
  return new BlobStore(new S3Backend({ bucket: p.bucket, prefix: p.prefix }, s3), opts);
}
