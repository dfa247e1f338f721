/**
 * `gpuchain dashboard [--port P] [--rpc URL] [--deployment FILE] [--coordinator URL] [--collector URL]`: serves the
 * web dashboard for any existing deployment (a local chain or Base Sepolia) until Ctrl-C. Read-only: it needs
 * no key and sends nothing.
 */
import { existsSync } from "node:fs";
import { parseCommand, UsageError } from "../sdk/run/args.ts";
import { startDashboardServer } from "../dashboard/server/server.ts";

const OPTIONS = {
  port: { type: "string", default: "8700" },
  host: { type: "string", default: "127.0.0.1" },
  coordinator: { type: "string", default: "http://127.0.0.1:8600" },
  collector: { type: "string", default: "http://127.0.0.1:8601" },
} as const;

export const USAGE = `usage: gpuchain dashboard [--port P] [--rpc URL] [--deployment FILE] [--coordinator URL]
                          [--collector URL]

  --port P            listen on 127.0.0.1:P (default 8700; 0 picks a free port)
  --rpc URL           JSON-RPC endpoint the browser reads the chain from (default http://127.0.0.1:8545)
  --deployment FILE   Ignition deployed_addresses.json (default: the local chain's)
  --coordinator URL   the coordinator keeper's HTTP server (default http://127.0.0.1:8600)
  --collector URL     the verdict collector's HTTP server (default http://127.0.0.1:8601)
  --store URL         the network's checkpoint store (file://DIR, s3://BUCKET/PREFIX or a folder), shown in the
                      provider command; without it the command says STORE_URL, to be filled in`;

export async function main(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, OPTIONS);
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be 0..65535, got "${values.port}"`);
  for (const [flag, url] of [
    ["rpc", values.rpc],
    ["coordinator", values.coordinator],
    ["collector", values.collector],
  ] as const) {
    if (!/^https?:\/\/[^\s]+$/.test(url)) throw new UsageError(`--${flag} must be an http(s) URL, got "${url}"`);
  }
  if (!existsSync(values.deployment))
    throw new UsageError(`--deployment ${values.deployment}: no such file (Ignition's deployed_addresses.json)`);
  const server = await startDashboardServer({
    rpc: values.rpc,
    deploymentFile: values.deployment,
    coordinatorUrl: values.coordinator,
    collectorUrl: values.collector,
    store: values.store,
    host: values.host,
    port,
    note: (l) => console.log(l),
  });
  console.log(`dashboard: ${server.url}`);
  console.log("read-only; Ctrl-C stops it");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return 0;
}
