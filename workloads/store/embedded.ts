// The embedded S3-compatible server (s3rver, pure JS, serving a folder) that `npm start` and the tests run, so the
// default network uses the same client code path as AWS S3, R2 or MinIO. s3rver knows one fixed key pair and
// checks no content checksums; the client verifies every blob itself.
import S3rver from "s3rver";

export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const;

export type EmbeddedS3 = {
  /** e.g. http://127.0.0.1:41234 — the AWS_ENDPOINT_URL for every part. */
  endpoint: string;
  bucket: string;
  /** s3://bucket/prefix for `--store`. */
  storeUrl: string;
  /** The AWS variables a child process needs to reach this server. */
  env: Record<string, string>;
  close(): Promise<void>;
};

export async function startEmbeddedS3(o: {
  dir: string;
  bucket?: string;
  prefix?: string;
  address?: string;
  port?: number;
}): Promise<EmbeddedS3> {
  const bucket = o.bucket ?? "gpuchain";
  const address = o.address ?? "127.0.0.1";
  const server = new S3rver({
    address,
    port: o.port ?? 0,
    directory: o.dir,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
    vhostBuckets: false,
  });
  const info = await server.run();
  const endpoint = `http://${address}:${info.port}`;
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
    close: () => server.close(),
  };
}
