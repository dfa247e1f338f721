/** The in-process simulated chain served as JSON-RPC over HTTP on loopback, for parts that take an RPC URL. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

type Requester = { request(r: { method: string; params: unknown[] }): Promise<unknown> };

/** Serves `provider` (a Hardhat network connection's provider) at a free loopback port until `close`. */
export async function rpcBridge(provider: Requester): Promise<{ url: string; close: () => Promise<void> }> {
  const handle = async (req: { id?: unknown; method: string; params?: unknown[] }) => {
    try {
      const result = await provider.request({ method: req.method, params: req.params ?? [] });
      return { jsonrpc: "2.0", id: req.id, result };
    } catch (err) {
      const e = err as { code?: number; message?: string; data?: unknown };
      return {
        jsonrpc: "2.0",
        id: req.id,
        error: { code: e.code ?? -32603, message: e.message ?? String(err), data: e.data },
      };
    }
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const out = Array.isArray(body) ? await Promise.all(body.map(handle)) : await handle(body);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(out, (_k, v) => (typeof v === "bigint" ? "0x" + v.toString(16) : v)));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
