/**
 * Low: /api/config handed the RPC URL verbatim (a provider's API key inside it) and the store's environment with
 * its keys. The real dashboard server, a real chain (anvil) behind a keyed endpoint that answers only with the key
 * in its path, query and userinfo (what Alchemy- or Infura-style URLs carry): the config holds none of the
 * secrets, the browser still reads the chain through the server's relay (reads only), and a local chain's URL
 * without credentials is handed over unchanged.
 */
import { expect } from "chai";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { rmSync } from "node:fs";
import path from "node:path";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { freePort, startAnvil } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { offlineDeployment } from "../dashboard/helpers.ts";

const PATH_KEY = "k3yInThePath0123456789abcdef";
const QUERY_KEY = "qu3ryKey0123456789";
const PASSWORD = "pa55word-secret";
const ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE";
const SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const SECRETS = [PATH_KEY, QUERY_KEY, PASSWORD, ACCESS_KEY, SECRET_KEY];

/** An RPC endpoint that needs its key (path, query and basic auth), forwarding to the chain at `chain`. */
async function keyedEndpoint(chain: string): Promise<Server> {
  const auth = `Basic ${Buffer.from(`alice:${PASSWORD}`).toString("base64")}`;
  const server = createServer((req, res) => {
    if (req.url !== `/v2/${PATH_KEY}?apikey=${QUERY_KEY}` || req.headers.authorization !== auth) {
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      void fetch(chain, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
        async (r) => res.writeHead(r.status, { "content-type": "application/json" }).end(await r.text()),
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function call(
  port: number,
  method: "GET" | "POST",
  urlPath: string,
  body?: string,
  type = "application/json",
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}`, ...(body === undefined ? {} : { "content-type": type }) };
    const req = request({ host: "127.0.0.1", port, path: urlPath, method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const rpcCall = (method: string) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] });

describe("low: /api/config carries no secrets (RPC credentials, store keys); the browser still reads the chain", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `lows-dash-config-${process.pid}`);
  const group = new ProcessGroup(() => {});
  let chain: string;
  let keyed: Server;
  let credentialed: DashboardServer;
  let local: DashboardServer;

  before(async function () {
    chain = await startAnvil(group, await freePort(0));
    keyed = await keyedEndpoint(chain);
    const { port } = keyed.address() as AddressInfo;
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    const deploymentFile = offlineDeployment(dir);
    const common = { deploymentFile, coordinatorUrl: dead, collectorUrl: dead, store: "s3://gpuchain/checkpoints" };
    credentialed = await startDashboardServer({
      ...common,
      rpc: `http://alice:${PASSWORD}@127.0.0.1:${port}/v2/${PATH_KEY}?apikey=${QUERY_KEY}`,
      storeEnv: {
        AWS_ENDPOINT_URL: "https://s3.example.org",
        AWS_ACCESS_KEY_ID: ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY: SECRET_KEY,
      },
    });
    local = await startDashboardServer({
      ...common,
      rpc: chain,
      storeEnv: {
        AWS_ENDPOINT_URL: "http://127.0.0.1:9000",
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      },
    });
  });

  after(async function () {
    await credentialed?.close();
    await local?.close();
    keyed?.close();
    await group.stopAll(5_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("GET /api/config names none of the RPC's or the store's secrets, and keeps the rest", async function () {
    const r = await call(credentialed.port, "GET", "/api/config");
    expect(r.status).to.equal(200);
    for (const secret of SECRETS) expect(r.body, secret).not.to.include(secret);
    const config = JSON.parse(r.body) as { rpc: string; storeEnv: Record<string, string> };
    expect(config.rpc).to.match(/^http:\/\/\S*127\.0\.0\.1:\d+\/v2\/REDACTED\?apikey=REDACTED$/);
    expect(config.storeEnv).to.deep.equal({ AWS_ENDPOINT_URL: "https://s3.example.org" });
  });

  it("the browser reads the chain through the server's relay (reads only, JSON only)", async function () {
    const read = await call(credentialed.port, "POST", "/api/rpc", rpcCall("eth_chainId"));
    expect(read.status, read.body).to.equal(200);
    expect(JSON.parse(read.body).result).to.equal("0x7a69");
    const write = await call(credentialed.port, "POST", "/api/rpc", rpcCall("eth_sendRawTransaction"));
    expect(write.status).to.equal(400);
    expect(JSON.parse(write.body).reason).to.match(/not a read this dashboard relays/);
    const batch = await call(credentialed.port, "POST", "/api/rpc", `[${rpcCall("eth_chainId")}]`);
    expect(batch.status).to.equal(400);
    // text/plain is what a cross-origin page may send without a preflight: refused.
    expect((await call(credentialed.port, "POST", "/api/rpc", rpcCall("eth_chainId"), "text/plain")).status).to.equal(
      415,
    );
  });

  it("a local chain's URL without credentials is handed over unchanged, and no relay is offered", async function () {
    const config = JSON.parse((await call(local.port, "GET", "/api/config")).body) as Record<string, unknown>;
    expect(config.rpc).to.equal(chain);
    expect(config.rpcRedacted).to.equal(false);
    // The embedded store's published test pair: named by a flag, not as keys.
    expect(config.storeEnv).to.deep.equal({ AWS_ENDPOINT_URL: "http://127.0.0.1:9000" });
    expect(config.storeTestKeyPair).to.equal(true);
    expect((await call(local.port, "POST", "/api/rpc", rpcCall("eth_chainId"))).status).to.equal(404);
  });
});
