/**
 * The HTTP endpoints other hosts reach (coordinator POST /heartbeat, collector POST /signatures), fuzzed against
 * a real chain: malformed, oversized (declared and streamed), out-of-range, wrong-deployment, unregistered,
 * forged and replayed requests, plus seeded random mutations of valid bodies. Every one gets a 4xx with its
 * reason, the server keeps serving (a valid request still succeeds after), and nothing is stored.
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { HDNodeWallet } from "ethers";
import { createCollector } from "../../keepers/collector/tick.ts";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { MAX_JOB_BEATS_PER_PROVIDER } from "../../keepers/coordinator/heartbeats.ts";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import { MAX_BODY_BYTES, startJsonServer, type JsonServer, type Route } from "../../keepers/http.ts";
import { checkpointDecisionDigest, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";
import { beat, domainOf, load, manualClock, testContext, wallet } from "./fixture.ts";
import { mulberry32 as prng } from "../helpers/random.ts";

const P1 = wallet(8); // registered by the fixture
const OUTSIDER = wallet(11); // never registered
const V1 = wallet(3); // a verifier Safe owner

/** Values that are wrong for any field here: wrong types, out of range, malformed hex, huge. */
const JUNK: unknown[] = [
  null,
  true,
  -1,
  1.5,
  2 ** 53,
  "",
  "x",
  "-1",
  "1e3",
  "0x",
  "0xzz",
  " 1",
  "١",
  [],
  {},
  [1],
  { a: 1 },
  "1".repeat(79),
  (2n ** 256n).toString(),
  (2n ** 64n).toString(),
  "0x" + "ff".repeat(33),
  "9".repeat(5000),
  Number.MAX_VALUE,
  "NaN",
];

type Reply = { status: number; reason?: string };

async function post(
  server: JsonServer,
  route: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const r = await fetch(`${server.url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await r.text();
  let reason: string | undefined;
  try {
    reason = (JSON.parse(text) as { reason?: string }).reason;
  } catch {
    reason = undefined;
  }
  return { status: r.status, reason };
}

/** Streams `bytes` with no Content-Length (chunked), as a client that never says how much it will send. */
function postChunked(server: JsonServer, route: string, bytes: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${route}`,
      { method: "POST", headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, reason: JSON.parse(text).reason }));
      },
    );
    req.on("error", reject);
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      req.end();
    };
    pump();
  });
}

function expect4xx(r: Reply, what: string): void {
  expect(r.status, `${what}: ${r.status} ${r.reason}`).to.be.within(400, 499);
  expect(r.reason, `${what}: a reason`).to.be.a("string").and.not.equal("");
}

/** Shared abuse every endpoint must answer with a 4xx. */
async function commonAbuse(server: JsonServer, route: string): Promise<void> {
  for (const body of ["", "{not json", "null", "[]", "42", '"str"', "{}", '{"a":'.repeat(1000)]) {
    expect4xx(await post(server, route, body), `body ${body.slice(0, 20)}`);
  }
  const big = await post(server, route, JSON.stringify({ pad: "x".repeat(MAX_BODY_BYTES + 1) }));
  expect(big.status, "declared oversized body").to.equal(413);
  expect(big.reason).to.contain("bytes");
  const streamed = await postChunked(server, route, MAX_BODY_BYTES * 4);
  expect(streamed.status, "streamed oversized body").to.equal(413);
}

describe("keepers: endpoints other hosts reach (fuzz)", function () {
  it("coordinator /heartbeat: every bad, foreign, unregistered or replayed beat is a 4xx; memory stays bounded", async function () {
    const p = await load();
    const clock = manualClock(Date.now());
    const { ctx } = await testContext(p, { signer: p.coordinator, nowMs: clock.now, component: "coordinator" });
    const keeper = createCoordinator(ctx, coordinatorConfig({}));
    const server = await startJsonServer({
      host: "127.0.0.1",
      port: 0,
      logger: ctx.logger,
      routes: { "POST /heartbeat": keeper.book.handler(clock.now) as Route },
    });
    const route = "/heartbeat";
    const send = (b: unknown) => post(server, route, JSON.stringify(b));
    try {
      await commonAbuse(server, route);
      const good = await beat(P1, p, clock.now());
      expect((await send(good)).status).to.equal(200);
      const replay = await send(good);
      expect4xx(replay, "replayed");
      expect(replay.reason).to.contain("replayed");
      // Another deployment on the same chain, another chain, an unregistered key, a forged sender.
      const foreign = await beat(P1, { ...p, deployment: { escrow: OUTSIDER.address } }, clock.now() + 1);
      expect((await send(foreign)).reason).to.contain("wrong escrow");
      expect((await send(await beat(P1, { ...p, chainId: 1n }, clock.now() + 2))).reason).to.contain("wrong chain");
      const stranger = await send(await beat(OUTSIDER, p, clock.now() + 3));
      expect(stranger.status).to.equal(403);
      expect(stranger.reason).to.contain("not a registered provider");
      expect((await send({ ...(await beat(OUTSIDER, p, clock.now() + 4)), provider: P1.address })).reason).to.contain(
        "signature",
      );
      // Out of range: epoch past uint64, job id past uint256, step past uint32.
      for (const [k, v] of [
        ["epoch", (2n ** 64n).toString()],
        ["jobId", (2n ** 256n).toString()],
        ["step", 2 ** 32],
      ] as const) {
        expect4xx(await send({ ...good, [k]: v, sentAt: clock.now() + 5 }), `${k} out of range`);
      }
      // Seeded mutations of a valid beat: each field replaced by junk.
      const rnd = prng(11);
      const fields = Object.keys(good);
      for (let i = 0; i < 300; i++) {
        const k = fields[Math.floor(rnd() * fields.length)];
        const v = JUNK[Math.floor(rnd() * JUNK.length)];
        if (JSON.stringify(v) === JSON.stringify((good as unknown as Record<string, unknown>)[k])) continue;
        expect4xx(await send({ ...good, [k]: v }), `mutation ${i}: ${k}=${JSON.stringify(v)?.slice(0, 30)}`);
      }
      // Nothing stored from any of that: only P1's one accepted beat.
      expect([...keeper.book.lastBeat.keys()]).to.deep.equal([P1.address.toLowerCase()]);
      expect(keeper.book.lastJobBeat.size).to.equal(0);
      // Memory per sender is bounded: cycling job ids keeps only the newest few.
      for (let j = 1; j <= 40; j++) {
        expect((await send(await beat(P1, p, clock.now() + 100 + j, BigInt(j), 1n))).status).to.equal(200);
      }
      expect(keeper.book.lastJobBeat.size).to.equal(MAX_JOB_BEATS_PER_PROVIDER);
      // Still serving.
      expect((await send(await beat(P1, p, clock.now() + 1000))).status).to.equal(200);
    } finally {
      await server.close();
    }
  });

  it("collector /signatures: bad, out-of-range (no more 500s) and foreign submissions are 4xx; nothing is stored", async function () {
    const p = await load();
    const stateFile = path.join(mkdtempSync(path.join(tmpdir(), "gpuchain-endpoints-")), "state.json");
    const { ctx } = await testContext(p, { signer: p.stranger, component: "collector" });
    const collector = createCollector(
      ctx,
      { stateFile, dryRun: true },
      {
        safeAddress: p.deployment.verifierSafe,
        escrowAddress: p.deployment.escrow,
      },
    );
    await collector.restore();
    const server = await startJsonServer({
      host: "127.0.0.1",
      port: 0,
      logger: ctx.logger,
      routes: { "POST /signatures": collector.submit },
    });
    const route = "/signatures";
    const send = (b: unknown) => post(server, route, JSON.stringify(b));
    const body = async (
      w: HDNodeWallet,
      message: { jobId: string; epoch: string; step: number; checkpointHash: string; accept: boolean },
    ) => {
      const typed = { jobId: 1n, epoch: 1n, step: 10, checkpointHash: message.checkpointHash, accept: message.accept };
      const digest = checkpointDecisionDigest(domainOf(p), typed);
      return {
        kind: "checkpoint",
        message,
        digest,
        signer: w.address,
        signature: await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest),
      };
    };
    try {
      await commonAbuse(server, route);
      const valid = await body(V1, {
        jobId: "1",
        epoch: "1",
        step: 10,
        checkpointHash: "0x" + "ab".repeat(32),
        accept: true,
      });
      // Out of range of the signed message's types: 400 with the field named, never a 500.
      for (const [k, v] of [
        ["epoch", (2n ** 64n).toString()],
        ["jobId", (2n ** 256n).toString()],
        ["step", 2 ** 32],
      ] as const) {
        const r = await send({ ...valid, message: { ...valid.message, [k]: v } });
        expect(r.status, `${k}: ${r.reason}`).to.equal(400);
        expect(r.reason).to.contain(k);
      }
      const verdict = {
        kind: "verdict",
        message: { jobId: "1", modelHash: "0x" + "cd".repeat(32), metric: (2n ** 256n).toString(), passed: true },
        digest: valid.digest,
        signer: V1.address,
        signature: valid.signature,
      };
      expect((await send(verdict)).reason).to.contain("metric");
      expect((await send({ ...(await body(OUTSIDER, valid.message)) })).reason).to.contain("not an owner");
      const rnd = prng(12);
      const top = ["kind", "digest", "signer", "signature", "message"];
      const inner = Object.keys(valid.message);
      for (let i = 0; i < 300; i++) {
        const v = JUNK[Math.floor(rnd() * JUNK.length)];
        const outer = rnd() < 0.5;
        const k = outer ? top[Math.floor(rnd() * top.length)] : inner[Math.floor(rnd() * inner.length)];
        const was = outer ? (valid as Record<string, unknown>)[k] : (valid.message as Record<string, unknown>)[k];
        if (JSON.stringify(v) === JSON.stringify(was)) continue; // e.g. accept: true is no mutation
        const mutated = outer ? { ...valid, [k]: v } : { ...valid, message: { ...valid.message, [k]: v } };
        expect4xx(await send(mutated), `mutation ${i}: ${JSON.stringify(mutated).slice(0, 400)}`);
      }
      expect(collector.pool.size, "nothing stored").to.equal(0);
      // Still serving; a re-sent valid signature counts once (verifiers re-send every tick by design).
      expect((await send(valid)).status).to.equal(200);
      expect((await send(valid)).status).to.equal(200);
      expect(collector.pool.size).to.equal(1);
      expect([...collector.pool.values()][0].signatures.size).to.equal(1);
    } finally {
      await server.close();
      await collector.idle();
    }
  });
});
