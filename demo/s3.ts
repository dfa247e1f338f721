/**
 * The checkpoint store of one `npm start` run: by default an embedded S3-compatible server (s3rver on loopback,
 * a free port, data under the run folder), so the default run goes through the same S3 client code as a network
 * on AWS S3, Cloudflare R2 or MinIO; or a store URL the user passes (`--store s3://…` with the AWS variables set,
 * or `--store file://DIR`), used as it is. Kept apart from scenario.ts: the scenario only asks for a URL and the
 * environment its children need, and closes the store at the end.
 */
import path from "node:path";
import { startEmbeddedS3 } from "../workloads/store/embedded.ts";

export type RunStore = {
  /** What every verifier and provider gets as --store. */
  url: string;
  /** Extra environment for those children (the embedded server's endpoint and key pair). */
  env: Record<string, string>;
  describe: string;
  close(): Promise<void>;
};

export async function runStore(runDir: string, given?: string, address = "127.0.0.1"): Promise<RunStore> {
  if (given) return { url: given, env: {}, describe: `checkpoint store ${given} (given)`, close: async () => {} };
  const s3 = await startEmbeddedS3({ dir: path.join(runDir, "store"), address });
  return {
    url: s3.storeUrl,
    env: s3.env,
    describe: `checkpoint store ${s3.storeUrl} on an embedded S3 server (s3rver) at ${s3.endpoint}`,
    close: s3.close,
  };
}
