// sdk/node/jsonRpc.ts JsonRpcClient against ethers' JsonRpcProvider, both talking to one loopback server: the same
// answers for the same bodies (non-ASCII text, batches, JSON-RPC errors), and the same error for a body that is not
// UTF-8 JSON — only the decoding moved from ethers' JavaScript to the platform's.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import { JsonRpcProvider, Network } from "ethers";
import { JsonRpcClient } from "../../sdk/node/jsonRpc.ts";

describe("sdk: JsonRpcClient decodes answers natively, as ethers would", function () {
  let server: Server;
  let url: string;
  /** What the server answers next: a function of the request's JSON. */
  let reply: (req: { id: number; method: string }[] | { id: number; method: string }) => Buffer;

  before(async function () {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        res.setHeader("content-type", "application/json");
        res.end(reply(JSON.parse(body)));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const both = () => {
    const network = Network.from(31337n);
    const o = { staticNetwork: network, batchMaxCount: 1, cacheTimeout: -1 };
    // A body that is not JSON is retried (sdk/node/rpc.ts) within a short bound here, then fails as ethers fails.
    return [new JsonRpcProvider(url, network, o), new JsonRpcClient(url, network, o, { budgetMs: 300 })] as const;
  };
  const json = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8");
  const answer = (result: unknown) => (req: { id: number } | { id: number }[]) =>
    json(
      Array.isArray(req)
        ? req.map((r) => ({ jsonrpc: "2.0", id: r.id, result }))
        : { jsonrpc: "2.0", id: req.id, result },
    );

  it("gives the same result for the same body, non-ASCII text and a large answer included", async function () {
    const logs = Array.from({ length: 2_000 }, (_, i) => ({ data: "0x" + "ab".repeat(64), note: `é ✓ 日本 ${i}` }));
    reply = answer(logs);
    const [ethersOwn, ours] = both();
    const a = await ethersOwn.send("eth_getLogs", [{}]);
    const b = await ours.send("eth_getLogs", [{}]);
    expect(b).to.deep.equal(a);
    expect(b[1].note).to.equal("é ✓ 日本 1");
    ethersOwn.destroy();
    ours.destroy();
  });

  it("a JSON-RPC error is the same error", async function () {
    reply = (req) =>
      json({ jsonrpc: "2.0", id: (req as { id: number }).id, error: { code: -32000, message: "execution reverted" } });
    const [ethersOwn, ours] = both();
    const failure = async (p: JsonRpcProvider) =>
      p.send("eth_call", [{}]).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
    const [a, b] = [await failure(ethersOwn), await failure(ours)];
    expect(b?.code).to.equal(a?.code).and.not.equal(undefined);
    expect(b?.message).to.equal(a?.message);
    ethersOwn.destroy();
    ours.destroy();
  });

  // The second: a well-formed answer whose result holds a byte that is not UTF-8 (a lenient decoder would pass it).
  const notUtf8 = (req: unknown) => {
    const [head, tail] = JSON.stringify({ jsonrpc: "2.0", id: (req as { id: number }).id, result: "#" }).split("#");
    return Buffer.concat([Buffer.from(head), Buffer.from([0xff]), Buffer.from(tail)]);
  };
  for (const [what, make] of [
    ["an HTML page", () => Buffer.from("<html>502 Bad Gateway</html>")],
    ["an answer with bytes that are not UTF-8", notUtf8],
  ] as const) {
    it(`${what} fails with ethers' own error`, async function () {
      reply = make;
      const [ethersOwn, ours] = both();
      const failure = async (p: JsonRpcProvider) =>
        p.send("eth_blockNumber", []).then(
          () => null,
          (e: Error & { code?: string; shortMessage?: string }) => e,
        );
      const [a, b] = [await failure(ethersOwn), await failure(ours)];
      expect(a?.code).to.equal("UNSUPPORTED_OPERATION");
      expect(b?.code).to.equal(a?.code);
      expect(b?.shortMessage).to.equal(a?.shortMessage);
      ethersOwn.destroy();
      ours.destroy();
    });
  }

  // CI: on a loaded machine the last retry began with a sliver of the bound left and timed out at once, so the
  // caller saw TIMEOUT (of the client's own making) instead of the node's answer. Placed here on purpose: the node
  // answers in 80 ms, and the jitter puts the second attempt ~20 ms before the bound ends.
  it("an attempt the time bound cuts short ends with the node's last error, not a timeout of the client's making", async function () {
    const slowHtml = () => Buffer.from("<html>502 Bad Gateway</html>");
    const server2 = createServer((_req, res) => {
      setTimeout(() => res.end(slowHtml()), 80);
    });
    await new Promise<void>((r) => server2.listen(0, "127.0.0.1", r));
    const url2 = `http://127.0.0.1:${(server2.address() as { port: number }).port}`;
    const network = Network.from(31337n);
    const o = { staticNetwork: network, batchMaxCount: 1, cacheTimeout: -1 };
    const retries: string[] = [];
    const ours = new JsonRpcClient(url2, network, o, {
      budgetMs: 400,
      baseMs: 320,
      random: () => 0.93, // first delay 297 ms: the second attempt starts near 80 + 297 = 377 ms, ~23 ms left
      onRetry: (r) => retries.push(r.kind),
    });
    const err = await ours.send("eth_blockNumber", []).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    ours.destroy();
    server2.closeAllConnections();
    await new Promise<void>((r) => server2.close(() => r()));
    expect(retries).to.deep.equal(["badJson"]);
    expect(err?.code).to.equal("UNSUPPORTED_OPERATION");
  });
});
