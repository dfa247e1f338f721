/**
 * The Status page's pure parts: a recording's own clock for the time-driven states, chart labels
 * that never overprint, the process states (killed, stopped, idle) and the keepers every view lists.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { placeRuleLabels } from "../../dashboard/src/components/labels.ts";
import { recordedChainNow } from "../../dashboard/src/model/clock.ts";
import { foldAll } from "../../dashboard/src/model/state.ts";
import { KEEPERS } from "../../keepers/registry.ts";
import { KEEPER_NAMES } from "../../sdk/words/keeperNames.ts";
import { mulberry32 } from "../../sdk/run/random.ts";
import { describeEvent } from "../../sdk/words/sentences.ts";
import { foldEscrowEvents, statusAt } from "../../sdk/rules/ledger.ts";
import { statusName } from "../../sdk/rules/job.ts";
import { clockAdvanceOf, clockAdvancedNote, parseRecording, type Entry } from "../../sdk/run/recording.ts";

type AbiEvent = { type: string; name: string; inputs: { name: string; type: string }[] };

/** A value of an ABI type as a recording carries it (bigints as decimal strings). */
const sampleArg = (type: string): unknown =>
  type.startsWith("uint") || type.startsWith("int")
    ? "7"
    : type === "bool"
      ? true
      : type === "address"
        ? "0x" + "ab".repeat(20)
        : type === "string"
          ? "text"
          : type.startsWith("tuple")
            ? {}
            : "0x" + "cd".repeat(32);

const recording = (name: string) => parseRecording(readFileSync(`recordings/${name}`, "utf8")).entries;
const eventAt = (entries: Entry[], name: string) =>
  entries.find((e) => e.kind === "event" && (e.data as { name: string }).name === name)!;

describe("dashboard: Status page parts", function () {
  describe("a recording's own clock", function () {
    const entries = recording("char-transformer.jsonl");
    const verdict = eventAt(entries, "VerdictSubmitted");
    const deadline = BigInt((verdict.data as { args: { disputeDeadline: string } }).args.disputeDeadline);
    const advance = entries.find((e) => e.kind === "note" && clockAdvanceOf(e.data) !== null)!;

    it("is unknown before the first verdict (no state depends on it then)", function () {
      expect(recordedChainNow(foldAll(entries, verdict.ms - 1))).to.equal(null);
    });

    it("is the verdict's block time at the verdict (deadline − the job's window), then runs with the recording", function () {
      // The job's window is 60 s in this run: at the verdict the window has 60 s left.
      expect(recordedChainNow(foldAll(entries, verdict.ms))).to.equal(deadline - 60n);
      expect(advance.ms).to.be.greaterThan(verdict.ms);
      expect(recordedChainNow(foldAll(entries, advance.ms - 1))).to.equal(deadline - 60n);
    });

    it("jumps where the run advanced the local chain's clock, whatever the viewer's clock says", function () {
      const seconds = clockAdvanceOf(advance.data)!;
      expect(seconds).to.equal(61);
      const at = recordedChainNow(foldAll(entries, advance.ms))!;
      expect(at).to.equal(deadline - 60n + 61n);
      expect(at > deadline).to.equal(true); // settleable at the recording's moment, not because of today's date
    });

    it("keeps a hand-written dispute Disputed until the recorded arbiter's 3 days pass on the recorded clock", function () {
      // verdict at chain time T (window 60 s); disputed 5 s later; the run then advances its chain by 3 days + 1 s
      const T = 1_700_000_000n; // 2023: years before any viewer
      const ev = (ms: number, name: string, args: Record<string, unknown>, block: number): Entry => ({
        ms,
        kind: "event",
        source: "chain",
        data: { name, args, blockNumber: block, logIndex: 0 },
      });
      const job = { jobId: "1" };
      const hand: Entry[] = [
        ev(1_000, "FeeRecipientSet", { feeRecipient: "0x" + "fe".repeat(20) }, 1),
        ev(
          2_000,
          "JobCreated",
          {
            ...job,
            client: "0x" + "c1".repeat(20),
            templateId: "0x" + "00".repeat(32),
            seed: "0x" + "00".repeat(32),
            totalSteps: "10",
            checkpointInterval: "10",
            maxPricePerStep: "1",
            budget: "10",
            disputeWindow: "60",
          },
          2,
        ),
        ev(
          10_000,
          "VerdictSubmitted",
          { ...job, modelHash: "0x", metric: "9000", passed: true, disputeDeadline: String(T + 60n), newEpoch: "1" },
          3,
        ),
        ev(
          15_000,
          "DisputeOpened",
          { ...job, client: "0x" + "c1".repeat(20), bond: "5", arbiterDeadline: String(T + 5n + 259_200n) },
          4,
        ),
        { ms: 16_000, kind: "note", source: "start", data: clockAdvancedNote(259_201) },
      ];
      const statusAtMs = (ms: number) => {
        const s = foldAll(hand, ms);
        const ledger = foldEscrowEvents(
          s.events.map((e, i) => ({ eventName: e.name, args: e.args, blockNumber: e.blockNumber, index: i })),
        );
        return statusName(statusAt(ledger.jobs.get(1n)!, recordedChainNow(s)!));
      };
      expect(statusAtMs(12_000)).to.equal("DisputeWindow");
      expect(statusAtMs(15_500)).to.equal("Disputed"); // the viewer's clock (years later) would say timed out
      expect(statusAtMs(16_000)).to.equal("ArbiterTimedOut");
    });

    it("reads back the note a run writes, and no other", function () {
      expect(clockAdvanceOf(clockAdvancedNote(259_201))).to.equal(259_201);
      expect(clockAdvanceOf("advanced the local chain's clock by soon")).to.equal(null);
      expect(clockAdvanceOf(undefined)).to.equal(null);
    });
  });

  it("places chart labels so that none overprints another or the target's label", function () {
    const rand = mulberry32(21);
    const area = { x0: 50, x1: 650, y0: 10, y1: 200 };
    for (let round = 0; round < 200; round++) {
      const n = 1 + Math.floor(rand() * 20);
      const xs = Array.from({ length: n }, () => 40 + rand() * 620);
      const widths = Array.from({ length: n }, () => 40 + rand() * 200);
      const target = { x0: 500, x1: 650, y0: 60, y1: 75 };
      const placed = placeRuleLabels(xs, widths, area, 14, 4, [target]);
      const boxes = placed.filter((p) => p !== null).map((p) => p!.box);
      for (const [i, a] of boxes.entries()) {
        expect(a.x0 >= area.x0 - 2 && a.x1 <= area.x1 + 2 && a.y1 <= area.y1, "inside the plot").to.equal(true);
        for (const b of [...boxes.slice(i + 1), target])
          expect(a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1, "overlap").to.equal(false);
      }
      // a label beside a line that is in the plot goes somewhere when the plot has room for it
      if (n === 1 && xs[0] >= area.x0 && xs[0] <= area.x1) expect(placed[0]).to.not.equal(null);
    }
  });

  it("tells killed from stopped from alive, by the run's own lines", function () {
    const entries = recording("sample.jsonl");
    const kill = entries.find((e) => e.kind === "note" && /killed alice \(SIGKILL\)/.test(String(e.data)))!;
    const after = foldAll(entries, kill.ms);
    expect(after.processes.get("alice")!.ended).to.deep.equal({ ms: kill.ms, how: "killed" });
    expect(after.processes.get("bob")!.ended).to.equal(undefined);
    const end = foldAll(entries);
    expect(end.processes.get("bob")!.ended?.how).to.equal("stopped");
    expect(end.processes.get("alice")!.ended?.how).to.equal("killed");
    // the process that runs the keepers is not one of them
    expect([...end.processes.keys()]).to.not.include("keeper");
    for (const k of KEEPER_NAMES) expect(end.processes.get(k)?.role, k).to.equal("keeper");
  });

  it("says every escrow and registry event kind in a sentence, never its bare name", function () {
    for (const contract of ["JobEscrow", "ProviderRegistry"]) {
      const file = `artifacts/contracts/${contract}.sol/${contract}.json`;
      const abi = JSON.parse(readFileSync(file, "utf8")).abi as AbiEvent[];
      for (const e of abi.filter((x) => x.type === "event")) {
        const args = Object.fromEntries(e.inputs.map((i) => [i.name, sampleArg(i.type)]));
        const sentence = describeEvent({ name: e.name, args }, (a) => `name(${String(a)})`);
        expect(sentence, `${contract}.${e.name}`).to.not.equal(e.name);
        expect(sentence, `${contract}.${e.name}`).to.not.match(/undefined|NaN/);
      }
    }
  });

  it("names the same keepers as the keepers' registry", function () {
    expect([...KEEPER_NAMES]).to.deep.equal(KEEPERS.map((k) => k.name));
  });
});
