/**
 * The dashboard's own HTTP server (node:http, loopback by default): the built app, GET /api/config (no secrets:
 * dashboard/server/publicConfig.ts), a status snapshot (GET /api/status), the live run as server-sent events in the
 * recordings' shape (GET /api/stream), and the recordings (GET /api/recordings/NAME). Only GET and HEAD, but for
 * POST /api/rpc: where the RPC URL carries a key, browsers never get it and read the chain through this server,
 * which relays JSON-RPC reads only; nothing it serves can change chain state. A bad request gets a 400 with the
 * reason; a request naming another Host than this server (DNS rebinding) a 403.
 */
import { listTemplates } from "../../workloads/templates.ts";
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { encodeEntry, parseRecording, recordingStart, type Entry } from "../../sdk/run/recording.ts";
import { DIST_DIR, ensureBuilt } from "./build.ts";
import { LiveFeed, type FeedOptions, type FeedSources } from "./feed.ts";
import { allowedHosts, checkHost, decideRequest, WILDCARDS, type Decision } from "./routes.ts";
import { publicRpcUrl, publicStoreEnv, rpcRelayProblem, rpcTarget } from "./publicConfig.ts";
import { EMBEDDED_S3_TEST_PAIR } from "../src/model/provideCommand.ts";

export interface DashboardOptions extends FeedSources {
  deploymentFile: string;
  store?: string;
  /**
   * What a provider needs in its environment to reach `store` (the embedded S3 server's endpoint and its fixed
   * test key pair, from `npm start`); shown in front of the Provide compute command. Never a real credential: a
   * store the operator gave keeps its variables to itself (empty).
   */
  storeEnv?: Record<string, string>;
  host?: string;
  port?: number;
  /**
   * Host header values answered besides the loopback names (127.0.0.1, localhost, [::1]) and the listen address,
   * each `name:port` or a bare name (the server's own port): e.g. a name that reaches it through a proxy.
   * Any other Host gets a 403 (DNS rebinding). Listening on 0.0.0.0 or :: also answers the interfaces' addresses.
   */
  allowedHosts?: string[];
  recordingsDir?: string;
  /** Extra recordings by name (e.g. the current run's own file). */
  extraRecordings?: Record<string, string>;
  /** The run this server is part of (`npm start`): its recording's entries are relayed live (feed.ts runLog). */
  runLog?: FeedOptions["runLog"];
  note?: (line: string) => void;
}

export interface DashboardServer {
  url: string;
  port: number;
  feed: LiveFeed;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

const CHAINS: Record<string, { name: string; explorer?: string }> = {
  "31337": { name: "Local chain" },
  "84532": { name: "Base Sepolia", explorer: "https://sepolia.basescan.org" },
};

/** This installation's folder, and the deployment file and a folder store as absolute paths (Provide compute). */
function absolutePaths(o: DashboardOptions) {
  const folder = o.store !== undefined && !/^[a-z][a-z0-9+.-]*:\/\//i.test(o.store);
  return {
    install: path.resolve(import.meta.dirname, "..", ".."),
    deploymentFile: path.resolve(o.deploymentFile),
    store: o.store === undefined ? null : folder ? path.resolve(o.store) : o.store,
  };
}

export async function startDashboardServer(o: DashboardOptions): Promise<DashboardServer> {
  await ensureBuilt(o.note);
  const feed = new LiveFeed({
    rpc: o.rpc,
    deployment: loadDeployment(o.deploymentFile),
    deploymentFile: o.deploymentFile,
    coordinatorUrl: o.coordinatorUrl,
    collectorUrl: o.collectorUrl,
    runLog: o.runLog,
  });
  feed.start();
  const recordingsDir = o.recordingsDir ?? path.resolve(DIST_DIR, "..", "..", "recordings");
  const recordings = () => listRecordings(recordingsDir, o.extraRecordings ?? {});
  const streams = new Set<ServerResponse>();

  const rpc = publicRpcUrl(o.rpc);
  const store = publicStoreEnv(o.storeEnv ?? {}, EMBEDDED_S3_TEST_PAIR);
  let hosts: string[] = [];
  const server = createServer((req, res) => {
    const d =
      checkHost(req.headers.host, hosts) ??
      decideRequest(req.method ?? "GET", req.url ?? "/", (name) => recordings().some((r) => r.name === name));
    void answer(d, req, res).catch(() => res.destroy());
  });

  /** POST /api/rpc: one JSON-RPC read relayed to the RPC, only where browsers are not given its URL. */
  async function relay(req: IncomingMessage, res: ServerResponse) {
    if (!rpc.redacted) return json(res, 404, { ok: false, reason: "no relay: read the chain at the RPC URL itself" });
    // application/json only: a cross-origin page cannot send it without a preflight, which this server refuses.
    if (!/^application\/json\b/i.test(req.headers["content-type"] ?? ""))
      return json(res, 415, { ok: false, reason: "content-type must be application/json" });
    const text = await readBody(req, RELAY_MAX_BYTES);
    if (text === undefined) return json(res, 413, { ok: false, reason: `a request over ${RELAY_MAX_BYTES} bytes` });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return json(res, 400, { ok: false, reason: "not JSON" });
    }
    const problem = rpcRelayProblem(body);
    if (problem) return json(res, 400, { ok: false, reason: problem });
    const target = rpcTarget(o.rpc);
    const headers = { ...target.headers, "content-type": "application/json" };
    const signal = AbortSignal.timeout(15_000);
    const answered = await fetch(target.url, { method: "POST", headers, body: text, signal }).catch(() => undefined);
    if (!answered) return json(res, 502, { ok: false, reason: "the RPC did not answer" });
    const reply = await answered.text();
    res.writeHead(answered.status, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(reply);
  }

  async function answer(d: Decision, req: IncomingMessage, res: ServerResponse) {
    if (d.kind === "error") return json(res, d.status, { ok: false, reason: d.reason });
    if (d.kind === "rpc") return relay(req, res);
    if (d.kind === "config") {
      // The chain that answers, even when the deployment is not on it (then deploymentProblem says why).
      const id = feed.answeredChainId?.toString() ?? (await waitForChainId(feed));
      // The stake rules are read right after the chain id; a page loaded at start still gets them.
      for (let i = 0; i < 30 && id && !feed.stakeRules && !feed.deploymentProblem; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const deployment = feed.deployment;
      return json(res, 200, {
        chainId: id ?? "unknown",
        chainName: CHAINS[id ?? ""]?.name ?? (id ? `Chain ${id}` : "Chain not answering"),
        explorer: CHAINS[id ?? ""]?.explorer,
        rpc: rpc.url,
        rpcRedacted: rpc.redacted,
        deploymentFile: o.deploymentFile,
        absolute: absolutePaths(o),
        deploymentProblem: feed.deploymentProblem,
        deployment: {
          escrow: deployment.escrow,
          registry: deployment.registry,
          usdc: deployment.usdc,
          verifierSafe: deployment.verifierSafe,
          firstBlock: deployment.firstBlock,
        },
        coordinator: feed.url("coordinatorUrl") ?? "http://127.0.0.1:8600",
        collector: feed.url("collectorUrl") ?? "http://127.0.0.1:8601",
        // unknown unless given: a guessed default sends providers to a store the verifiers never read
        store: o.store ?? null,
        storeEnv: store.env,
        storeTestKeyPair: store.testKeyPair,
        stakeRules: feed.stakeRules,
        recordings: recordings().map(({ name, entries, date }) => ({ name, entries, date })),
        serverStartedAt: feed.startedAt,
        templates: listTemplates().map((t) => ({
          id: t.templateId,
          name: t.descriptor.name,
          evalRules: t.descriptor.evalRules,
        })),
      });
    }
    if (d.kind === "status") return json(res, 200, feed.snapshot());
    if (d.kind === "stream") return stream(req, res);
    if (d.kind === "recording") {
      const r = recordings().find((x) => x.name === d.name)!;
      res.writeHead(200, { "content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-store" });
      if (req.method === "HEAD") return res.end();
      return void createReadStream(r.file).pipe(res);
    }
    // Static files of the built app; anything else under / is the app itself (the view lives in the URL).
    const file = path.join(DIST_DIR, d.path);
    const target = existsSync(file) && statSync(file).isFile() ? file : path.join(DIST_DIR, "index.html");
    res.writeHead(200, {
      "content-type": TYPES[path.extname(target)] ?? "application/octet-stream",
      "cache-control": target.includes(`${path.sep}assets${path.sep}`)
        ? "public, max-age=31536000, immutable"
        : "no-cache",
    });
    if (req.method === "HEAD") return res.end();
    createReadStream(target).pipe(res);
  }

  function stream(req: IncomingMessage, res: ServerResponse) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    if (req.method === "HEAD") return res.end();
    const send = (e: Entry) => res.write(`data: ${encodeEntry(e)}\n\n`); // a recording's line, bigints as text
    for (const e of feed.entries) send(e);
    const off = feed.subscribe(send);
    const ping = setInterval(() => res.write(": ping\n\n"), 15_000);
    streams.add(res);
    req.on("close", () => {
      off();
      clearInterval(ping);
      streams.delete(res);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, o.host ?? "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  hosts = allowedHosts(port, o.host, [...(o.allowedHosts ?? []), ...interfaceAddresses(o.host)]);
  return {
    url: `http://${o.host ?? "127.0.0.1"}:${port}/`,
    port,
    feed,
    close: async () => {
      for (const r of streams) r.end();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await feed.stop();
    },
  };
}

/** The machine's own addresses when listening on every interface (an address is no name DNS can rebind). */
function interfaceAddresses(host: string | undefined): string[] {
  if (host === undefined || !WILDCARDS.has(host)) return [];
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** Right after start the first chain read may still be on its way; later, a chain that is down is not waited for. */
async function waitForChainId(feed: LiveFeed): Promise<string | undefined> {
  while (feed.answeredChainId === null && Date.now() - feed.startedAt < 3000) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return feed.answeredChainId?.toString();
}

const RELAY_MAX_BYTES = 65_536;

/** The request's body as text, or undefined past `max` bytes. */
async function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

interface RecordingFile {
  name: string;
  file: string;
  entries: number;
  date: string;
}

function listRecordings(dir: string, extra: Record<string, string>): RecordingFile[] {
  const files: [string, string][] = [];
  if (existsSync(dir)) for (const f of readdirSync(dir)) if (f.endsWith(".jsonl")) files.push([f, path.join(dir, f)]);
  for (const [name, file] of Object.entries(extra)) if (existsSync(file)) files.push([name, file]);
  return files.map(([name, file]) => {
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n").filter((l) => l.trim());
    return { name, file, entries: lines.length, date: dateOf(lines) };
  });
}

function dateOf(lines: string[]): string {
  return recordingStart(parseRecording(lines.slice(0, 50).join("\n")).entries);
}
