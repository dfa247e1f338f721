// The embedded S3-compatible server (s3rver, pure JS, serving a folder) that `npm start` and the tests run, so the
// default network uses the same client code path as AWS S3, R2 or MinIO. s3rver knows one fixed key pair and
// checks no content checksums; the client verifies every blob itself. By default s3rver listens on the loopback
// only and the content gate (gate.ts) is the store's one door: whoever has the key pair can add blobs that hash
// to their names, and nothing else (no overwrite, no delete).
import { rm } from "node:fs/promises";
import { join } from "node:path";
import S3rver from "s3rver";
import { startContentGate, type ContentGate, type GateOptions } from "./gate.ts";

export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const;

export type EmbeddedS3 = {
  /** e.g. http://127.0.0.1:41234 — the AWS_ENDPOINT_URL for every part. */
  endpoint: string;
  bucket: string;
  /** s3://bucket/prefix for `--store`. */
  storeUrl: string;
  /** The AWS variables a child process needs to reach this server. */
  env: Record<string, string>;
  /**
   * s3rver itself, behind the gate (loopback only): for tests that model the store's own host writing past the
   * gate. The same as `endpoint` when started with `gate: false`.
   */
  upstream: string;
  /** The gate, unless started with `gate: false`. */
  gate?: ContentGate;
  close(): Promise<void>;
};

export async function startEmbeddedS3(o: {
  dir: string;
  bucket?: string;
  prefix?: string;
  address?: string;
  port?: number;
  /** false: s3rver itself on address:port, writable in every way (the store before the gate). Default true. */
  gate?: boolean;
  /** The gate's bounds, where a test or an operator wants other ones than gateBounds.ts's defaults. */
  bounds?: Pick<GateOptions, "budget" | "uploadTtlMs" | "minFreeBytes" | "maxHeldBytes">;
}): Promise<EmbeddedS3> {
  const bucket = o.bucket ?? "gpuchain";
  const address = o.address ?? "127.0.0.1";
  const gated = o.gate ?? true;
  const server = new S3rver({
    address: gated ? "127.0.0.1" : address,
    port: gated ? 0 : (o.port ?? 0),
    directory: o.dir,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
    vhostBuckets: false,
  });
  const info = await server.run();
  const upstream = `http://${gated ? "127.0.0.1" : address}:${info.port}`;
  let gate: ContentGate | undefined;
  try {
    if (gated)
      gate = await startContentGate({
        upstream,
        address,
        port: o.port,
        ...o.bounds,
        diskDirs: [o.dir],
        // s3rver implements no abort: an upload's parts stay in its folder until removed here.
        dropUpload: (b, id) => rm(join(o.dir, b, "._S3rver_uploads", id), { recursive: true, force: true }),
      });
  } catch (e) {
    await server.close();
    throw e;
  }
  const endpoint = gate?.endpoint ?? upstream;
  return {
    endpoint,
    bucket,
    storeUrl: `s3://${bucket}/${o.prefix ?? "checkpoints"}`,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    },
    upstream,
    gate,
    close: async () => {
      await gate?.close();
      await server.close();
    },
  };
}
