/**
 * The checkpoint store of one `npm start` run: by default an embedded S3-compatible server (s3rver on loopback,
 * a free port, data under the run folder), so the default run goes through the same S3 client code as a network
 * on AWS S3, Cloudflare R2 or MinIO; or a store URL the user passes (`--store s3://…` with the AWS variables set,
 * or `--store file://DIR`), used as it is. Kept apart from scenario.ts: the scenario only asks for a URL and the
 * environment its children need, and closes the store at the end.
 */
import path from "node:path";
import { UsageError } from "../sdk/run/args.ts";
import { sleep } from "../sdk/run/retry.ts";
import { storeUrlArg } from "../sdk/run/storeArg.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3 } from "../workloads/store/embedded.ts";
import type { HostNet } from "./hosts.ts";
import type { ProcessGroup } from "./processes.ts";

export type RunStore = {
  /** What every verifier and provider gets as --store. */
  url: string;
  /** Extra environment for those children (the embedded server's endpoint and key pair). */
  env: Record<string, string>;
  describe: string;
  close(): Promise<void>;
};

/**
 * `--store URL` checked before anything starts, by the parser every verifier and provider runs on it
 * (workloads/store/url.ts): a URL they would refuse is a usage error now, not six children exiting after the
 * deployment.
 */
export function checkStoreOption(given: string | undefined): void {
  if (given === undefined) return;
  try {
    storeUrlArg(given); // what `gpuchain provide` and `verify` run on their --store
  } catch (err) {
    const reason = (err as Error)?.message ?? String(err);
    if (!(err instanceof UsageError)) throw new UsageError(`--store ${given}: ${reason}`); // new URL's own
    throw new UsageError(reason.startsWith("--store") ? reason : `--store: ${reason}`);
  }
}

export async function runStore(
  runDir: string,
  given?: string,
  hosts?: { net: HostNet; group: ProcessGroup },
): Promise<RunStore> {
  if (given) return { url: given, env: {}, describe: `checkpoint store ${given} (given)`, close: async () => {} };
  if (hosts) return storeOnItsHost(hosts.net, hosts.group);
  const address = "127.0.0.1";
  const s3 = await startEmbeddedS3({ dir: path.join(runDir, "store"), address });
  return {
    url: s3.storeUrl,
    env: s3.env,
    describe: `checkpoint store ${s3.storeUrl} on an embedded S3 server (s3rver) at ${s3.endpoint}`,
    close: s3.close,
  };
}

/** --hosts: the S3 server as a process on the store's own host, reached over the run's network. */
async function storeOnItsHost(net: HostNet, group: ProcessGroup): Promise<RunStore> {
  const h = net.host("store");
  const port = 9000; // the store's host has a port space of its own
  group.start("store", ["demo/s3server.ts", path.join(h.dataDir, "s3"), h.ip, String(port)], {}, net.wrapper("store"));
  const endpoint = `http://${h.ip}:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!group.has("store")) throw new Error("the S3 server exited during start-up (see its output above)");
    if (
      await fetch(endpoint, { signal: AbortSignal.timeout(2_000) }).then(
        () => true,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error(`the S3 server did not answer on ${endpoint} within 60 s`);
    await sleep(300);
  }
  return {
    url: "s3://gpuchain/checkpoints",
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    },
    describe: `checkpoint store s3://gpuchain/checkpoints on host ${h.ns} (${endpoint}, s3rver)`,
    close: async () => {},
  };
}
