/** The dashboard's pure parts: request rules, shortcuts, the fold of a recording, the keepers' read-only views. */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { decideRequest } from "../../dashboard/server/routes.ts";
import { keyAction } from "../../dashboard/src/keyboard.ts";
import { parseRecording, type ChainEvent } from "../../sdk/run/recording.ts";
import { foldAll } from "../../dashboard/src/model/state.ts";
import { nextDelay } from "../../dashboard/src/sources/backoff.ts";
import { PAGES } from "../../dashboard/src/pageList.ts";
import { HeartbeatView } from "../../keepers/coordinator/heartbeatView.ts";
import { pendingView } from "../../keepers/collector/pendingView.ts";
import { addSignature, type Pool } from "../../keepers/collector/decide.ts";

describe("dashboard: pure parts", function () {
  const has = (n: string) => n === "sample.jsonl";

  describe("requests", function () {
    it("serves the app, the API and the recordings, GET and HEAD only", function () {
      expect(decideRequest("GET", "/", has)).to.deep.equal({ kind: "static", path: "index.html" });
      expect(decideRequest("HEAD", "/assets/index-1.js", has)).to.deep.equal({
        kind: "static",
        path: "assets/index-1.js",
      });
      expect(decideRequest("GET", "/?page=onchain&run=sample.jsonl&t=5", has).kind).to.equal("static");
      expect(decideRequest("GET", "/api/stream", has).kind).to.equal("stream");
      expect(decideRequest("GET", "/api/recordings/sample.jsonl", has)).to.deep.equal({
        kind: "recording",
        name: "sample.jsonl",
      });
      for (const m of ["POST", "PUT", "DELETE", "PATCH"])
        expect(decideRequest(m, "/api/status", has)).to.include({ kind: "error", status: 405 });
    });

    it("refuses bad requests with a 400 and the reason", function () {
      const bad = (url: string) => decideRequest("GET", url, has) as { status: number; reason: string };
      expect(bad("/api/recordings/..%2F..%2Fetc%2Fpasswd")).to.include({ status: 400 });
      expect(bad("/api/recordings/x.txt").reason).to.match(/NAME\.jsonl/);
      expect(bad("/api/status?verbose=1").reason).to.match(/no query parameters/);
      expect(bad("/?evil=1").reason).to.match(/unknown query parameter evil/);
      expect(bad("/..%2Fpackage.json")).to.include({ status: 400 });
      // A plain ../ is resolved by the URL itself, never above the app's folder.
      expect(decideRequest("GET", "/a/../../package.json", has)).to.deep.equal({
        kind: "static",
        path: "package.json",
      });
      expect(bad("/%E0%A4%A")).to.include({ status: 400 });
      expect(bad("/api/recordings/none.jsonl")).to.include({ status: 404 });
      expect(bad("/api/nothing")).to.include({ status: 404 });
    });
  });

  describe("shortcuts", function () {
    const key = (k: string, over: Record<string, unknown> = {}) => ({
      key: k,
      ctrlKey: false,
      altKey: false,
      metaKey: false,
      target: null,
      ...over,
    });
    it("maps keys to actions, g-prefixed too", function () {
      expect(keyAction(key("?"), null, PAGES)).to.deep.equal({ kind: "help" });
      expect(keyAction(key("1"), null, PAGES)).to.deep.equal({ kind: "page", page: "status" });
      expect(keyAction(key("o"), "g", PAGES)).to.deep.equal({ kind: "page", page: "onchain" });
      expect(keyAction(key("]"), null, PAGES)).to.deep.equal({ kind: "speed", by: 1 });
      expect(keyAction(key("x"), null, PAGES)).to.equal(null);
    });
    it("ignores keys while typing and with Ctrl/Alt/Meta (the browser's own)", function () {
      const input = { tagName: "INPUT", isContentEditable: false } as unknown as EventTarget;
      expect(keyAction(key("?", { target: input }), null, PAGES)).to.equal(null);
      expect(keyAction(key("1", { ctrlKey: true }), null, PAGES)).to.equal(null);
      expect(keyAction(key("l", { metaKey: true }), null, PAGES)).to.equal(null);
    });
  });

  it("backs off 1, 2, 4 … s, capped", function () {
    expect([1, 2, 3, 4, 5, 6].map((n) => nextDelay(n))).to.deep.equal([1000, 2000, 4000, 8000, 15000, 15000]);
  });

  it("folds the committed recording into the run it tells", function () {
    const { entries, errors } = parseRecording(readFileSync("recordings/sample.jsonl", "utf8"));
    expect(errors).to.deep.equal([]);
    const s = foldAll(entries);
    const byName = (n: string) => [...s.providers.values()].find((p) => p.name === n)!;
    expect(byName("mallory")).to.include({ refused: 1, accepted: 0 });
    expect(byName("alice")).to.include({ accepted: 100 });
    expect(byName("bob").earned).to.equal(600_000n);
    expect([...byName("bob").badges]).to.include("Capped profile");
    expect([...byName("mallory").badges]).to.include("Injected fault");
    expect(s.markers.map((m) => m.kind)).to.deep.equal(
      ["refusal", "failover", "kill", "verdict", "settle"].sort((a, b) => order(s, a) - order(s, b)),
    );
    expect(s.lanes.map((l) => l.end)).to.deep.equal(["refused", "taken away by the coordinator", "verdict"]);
    const accepted = [...s.checkpoints.values()].filter((c) => c.status === "accepted");
    // The run's own acceptances, in order (a failover's first checkpoint may be short of a round step).
    const onChain = entries.filter((e) => e.kind === "event" && (e.data as ChainEvent).name === "CheckpointAccepted");
    expect(accepted.map((c) => c.step)).to.deep.equal(onChain.map((e) => Number((e.data as ChainEvent).args.step)));
    expect(accepted.map((c) => c.step).at(-1)).to.equal(600);
    expect(accepted.every((c) => c.signers.size >= 2)).to.equal(true);
    // Never a guess: until an entry says so, nothing is known.
    expect(foldAll(entries, 0).providers.size).to.equal(0);
  });

  it("coordinator GET /heartbeats lists only beats POST /heartbeat accepted, with their age", async function () {
    const view = new HeartbeatView();
    let now = 1_000;
    const accept = view.tap(
      (body) => ({ status: (body as { ok: boolean }).ok ? 200 : 400, body: {} }),
      () => now,
    );
    await accept({ ok: true, provider: "0xAb", jobId: "1", epoch: "2", step: 7, loss: 0.5, stepsPerSecond: 3 });
    await accept({ ok: false, provider: "0xCd", jobId: "1", epoch: "2", step: 9 });
    now = 1_600;
    const r = (await view.route(() => now)(undefined)) as {
      body: { beats: { provider: string; ageMs: number; loss: number }[] };
    };
    expect(r.body.beats).to.have.length(1);
    expect(r.body.beats[0]).to.include({ provider: "0xAb", ageMs: 600, loss: 0.5 });
  });

  it("collector GET /pending lists who signed what, before it lands", function () {
    const pool: Pool = new Map();
    const decision = {
      kind: "checkpoint" as const,
      message: { jobId: 1n, epoch: 3n, step: 10, checkpointHash: "0x" + "11".repeat(32), accept: true },
    };
    addSignature(pool, {
      decision,
      digest: "0x" + "aa".repeat(32),
      signer: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
      signature: "0x",
    });
    const body = pendingView(pool).body as {
      pending: { job: bigint; step: number; action: string; signers: string[] }[];
    };
    expect(body.pending[0]).to.deep.include({
      job: 1n,
      step: 10,
      action: "accept",
      signers: ["0x90F79bf6EB2c4f870365E785982E1f101E93b906"],
    });
  });
});

function order(s: ReturnType<typeof foldAll>, kind: string): number {
  return s.markers.find((m) => m.kind === kind)!.ms;
}
