/**
 * "One meaning per number, every fact in one home", on the real protocol (Ignition deployment, real
 * Safe, the simulated chain):
 *  - who may take a job: sdk/rules/jobFit.ts `termsRefusal` (what `gpuchain job create` / `explain` say) and the
 *    coordinator's exclusion agree with JobEscrow `assign` and the registry's `stakeQuote`, at free stake
 *    needed − 1, needed, needed + 1, with a lock by price and one by the network minimum, and with a lock still held;
 *  - one slashed provider and one short of stake, read through the pure functions each surface calls (explain,
 *    wallet, `npm start`'s table, the dashboard's model), give the same figures, the chain's, and the same reason;
 *  - when a deadline turns a status: the ledger's `statusAt`, the finalizer's `derivedStatus` and `settleTiming`
 *    against `statusOf` at the deadline and the second after.
 */
import { expect } from "chai";
import {
  DEFAULT_REQUEST,
  DeviceKind,
  MIN_STAKE,
  STAKE,
  ckpt,
  createJob,
  depositStake,
  deployProtocol,
  faultAt,
  networkHelpers,
  reportAndAccept,
  runToVerdict,
  signFault,
  startJob,
  type Protocol,
} from "../helpers/fixture.ts";
import { escrowLedger } from "../../sdk/node/events.ts";
import { describeWait, jobFit, termsRefusal, type JobTerms, type Offer } from "../../sdk/rules/jobFit.ts";
import { statusAt, stakeBookOf, type Ledger } from "../../sdk/rules/ledger.ts";
import { providerSummaries } from "../../sdk/words/narrative.ts";
import { STAKE_LABELS, freeStake, stakeNeeded } from "../../sdk/rules/stake.ts";
import { stakeSentence, walletFacts } from "../../sdk/rules/walletFacts.ts";
import { deadlineOf } from "../../sdk/rules/ledger.ts";
import { settleTiming, statusAtDeadline } from "../../sdk/rules/settleTiming.ts";
import { statusName } from "../../sdk/rules/job.ts";
import { encodeEntry, parseRecording, type Entry } from "../../sdk/run/recording.ts";
import { formatTable, stakeCell } from "../../demo/report.ts";
import { foldAll } from "../../dashboard/src/model/state.ts";
import { derivedStatus } from "../../keepers/finalizer/decide.ts";
import {
  RESTAKE_NAMED,
  exclusionOf,
  planCoordinator,
  type CoordinatorView,
  type ProviderView,
} from "../../keepers/coordinator/decide.ts";
import { usdcAmount } from "../../sdk/words/format.ts";
import { FACT_LABELS } from "../../sdk/words/factLabels.ts";
import { readFileSync } from "node:fs";
import { openJob } from "../helpers/jobs.ts";

type Signer = Protocol["provider4"];

/** The registry's offer of `who` as `gpuchain job create` reads it (cli/fit.ts currentOffers: quote + stakeOf). */
async function offerOf(p: Protocol, who: Signer): Promise<Offer & ProviderView> {
  const [pricePerStep, memoryMiB, active] = await p.registry.quote(who.address);
  const stakeFree = freeStake(await p.registry.stakeOf(who.address));
  return { address: who.address, pricePerStep, memoryMiB: Number(memoryMiB), active, registered: true, stakeFree };
}

/** A job's terms as `job create` and the coordinator read them, from the chain. */
async function termsOf(p: Protocol, jobId: bigint): Promise<JobTerms & { jobId: bigint; templateId: string }> {
  const j = await p.escrow.jobOf(jobId);
  return {
    jobId,
    templateId: j.templateId,
    totalSteps: Number(j.totalSteps),
    acceptedStep: Number(j.acceptedStep),
    maxPricePerStep: j.maxPricePerStep,
    budget: j.budget,
    paid: j.paid,
    checkpointInterval: Number(j.checkpointInterval),
    minStake: await p.registry.minStake(),
  };
}

/** The coordinator's exclusion of `offer` from the Open job (a live, idle provider: only the terms can refuse it). */
async function coordinatorSays(p: Protocol, jobId: bigint, offer: ProviderView) {
  const t = await termsOf(p, jobId);
  const job = {
    ...t,
    status: "Open" as const,
    epoch: 0n,
    pendingStep: 0,
    checkpointInterval: t.checkpointInterval!,
    provider: "0x0000000000000000000000000000000000000000",
    leaseExpiresAt: 0n,
  };
  const view: CoordinatorView = {
    nowMs: 1_000,
    chainTime: 0n,
    timeoutMs: 10_000,
    isCoordinator: true,
    jobs: [job],
    providers: [offer],
    lastBeat: new Map([[offer.address.toLowerCase(), { receivedAt: 1_000, jobId: "0", epoch: "0" }]]),
    lastJobBeat: new Map(),
    watchStart: new Map(),
    fenced: new Map(),
    memoryNeedMiB: () => 0,
    minStake: t.minStake,
  };
  return exclusionOf(job, offer, view, new Set());
}

/** Whether the escrow's `assign` of `who` reverts for stake (and nothing else). */
async function assignRefusedForStake(p: Protocol, jobId: bigint, who: Signer): Promise<boolean> {
  try {
    await (await p.escrow.connect(p.coordinator).assign(jobId, who.address)).wait();
    return false;
  } catch (err) {
    const data = (err as { data?: string }).data ?? "";
    const decoded = p.escrow.interface.parseError(data);
    if (decoded?.name !== "JobEscrowStakeShort") throw err;
    return true;
  }
}

describe("one meaning per number, every fact in one home", function () {
  describe("the stake rule: sdk (job create, explain, coordinator) against JobEscrow assign and stakeQuote", function () {
    const cases = [
      { what: "the network minimum (price × interval below it)", price: 1n, interval: 10 },
      { what: "price × interval (above the minimum)", price: 2_000n, interval: 700 },
    ];
    for (const c of cases) {
      for (const d of [-1n, 0n, 1n]) {
        it(`lock by ${c.what}, free stake needed ${d < 0n ? "− 1" : d > 0n ? "+ 1" : "exactly"}`, async function () {
          const p = await networkHelpers.loadFixture(deployProtocol);
          await p.registry.connect(p.provider4).register("short", c.price, DeviceKind.GPU, "GPU", 200_000);
          const needed = stakeNeeded(MIN_STAKE, c.price, BigInt(c.interval));
          await depositStake(p, p.provider4, needed + d);
          const jobId = await createJob(p, {
            totalSteps: c.interval * 2,
            checkpointInterval: c.interval,
            maxPricePerStep: c.price,
            budget: c.price * BigInt(c.interval * 2),
          });
          // The registry's quote of the lock `assign` takes (JobEscrow `_lockFor`: price × interval).
          const [chainNeeded, chainFree] = await p.registry.stakeQuote(
            p.provider4.address,
            jobId,
            c.price * BigInt(c.interval),
          );
          const offer = await offerOf(p, p.provider4);
          expect([needed, offer.stakeFree]).to.deep.equal([chainNeeded, chainFree]);
          const terms = await termsOf(p, jobId);
          const fit = jobFit(terms, [offer]);
          const sdkSays = termsRefusal(terms, offer);
          const coordinator = await coordinatorSays(p, jobId, offer);
          const refused = await assignRefusedForStake(p, jobId, p.provider4);
          expect(refused, "the chain").to.equal(d < 0n);
          expect(sdkSays, "sdk termsRefusal").to.equal(refused ? "stake short" : undefined);
          expect(coordinator, "the coordinator").to.equal(sdkSays);
          // `job create` / `explain`: never "fits" when the coordinator refuses every provider for stake.
          expect(fit.fitting.length, "job create's fit").to.equal(refused ? 0 : 1);
          if (refused)
            expect(fit.reasons).to.deep.equal([
              { kind: "stake short", provider: p.provider4.address, needed, free: needed - 1n },
            ]);
        });
      }
    }

    it("a lock still held on the job only needs topping up (registry _extraNeeded)", async function () {
      const p = await networkHelpers.loadFixture(deployProtocol);
      const jobId = await startJob(p);
      await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, ckpt(jobId, 10));
      await p.escrow.connect(p.coordinator).unassign(jobId); // its pending checkpoint keeps its lock
      const held = await p.registry.lockOf(p.provider1.address, jobId);
      expect(held).to.equal(MIN_STAKE);
      for (const price of [900n, 200_000n]) {
        const [chainNeeded] = await p.registry.stakeQuote(p.provider1.address, jobId, price * 10n);
        expect(stakeNeeded(MIN_STAKE, price, 10n, held), `price ${price}`).to.equal(chainNeeded);
      }
    });
  });

  it("the coordinator's wait line names the first few providers short of stake and counts the rest (pure)", function () {
    const providers: ProviderView[] = Array.from({ length: RESTAKE_NAMED + 2 }, (_, i) => ({
      address: `0x${(i + 1).toString(16).padStart(40, "0")}`,
      pricePerStep: 900n,
      memoryMiB: 1_024,
      active: true,
      registered: true,
      stakeFree: MIN_STAKE - 1n,
    }));
    const job = openJob({ templateId: "t" });
    const [d] = planCoordinator({
      nowMs: 1_000,
      chainTime: 0n,
      timeoutMs: 10_000,
      isCoordinator: true,
      jobs: [job],
      providers,
      lastBeat: new Map(providers.map((p) => [p.address, { receivedAt: 1_000, jobId: "0", epoch: "0" }])),
      lastJobBeat: new Map(),
      watchStart: new Map(),
      fenced: new Map(),
      memoryNeedMiB: () => 0,
      minStake: MIN_STAKE,
    });
    expect(d.action).to.equal("wait");
    expect(d.reason).to.contain(`(stake short ×${providers.length})`);
    expect(d.reason.match(/has 0\.999999 USDC of free stake/g)).to.have.length(RESTAKE_NAMED);
    expect(d.reason).to.contain("2 more provider(s) short of free stake for this job's lock");
  });

  describe("a slashed provider and one short of stake, through every surface's pure functions", function () {
    /**
     * provider1 earns one accepted checkpoint (10 × 900), then is slashed for a fabricated one (its unclaimed 9,000
     * voided, 1 USDC of stake gone); provider4 registers with half the network minimum as stake.
     */
    async function run() {
      const p = await networkHelpers.loadFixture(deployProtocol);
      const jobId = await startJob(p);
      await reportAndAccept(p, jobId, p.provider1, 10);
      const hash = ckpt(jobId, 20, "fabricated");
      await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, hash);
      const fault = faultAt(p, 17);
      const sigs = await signFault(p, jobId, 1n, 20, hash, fault);
      await (await p.escrow.connect(p.stranger).refuseWithFault(jobId, 1n, 20, hash, fault, sigs)).wait();
      await p.registry.connect(p.provider4).register("short", 500n, DeviceKind.GPU, "GPU", 200_000);
      await depositStake(p, p.provider4, MIN_STAKE / 2n);
      const waiting = await createJob(p);
      const ledger = await escrowLedger(p.escrow, 0, { registry: p.registry });
      return { p, jobId, waiting, ledger, entries: await recordedEntries(p) };
    }

    /** The chain's escrow and registry events as `npm start` records them (and the dashboard plays them back). */
    async function recordedEntries(p: Protocol): Promise<Entry[]> {
      const entries: Entry[] = [];
      for (const [contract, c] of [
        ["escrow", p.escrow],
        ["registry", p.registry],
      ] as const) {
        for (const log of await c.queryFilter("*" as never)) {
          const parsed = c.interface.parseLog(log);
          if (!parsed) continue;
          const data = {
            name: parsed.name,
            args: parsed.args.toObject(),
            blockNumber: log.blockNumber,
            logIndex: log.index,
            contract,
          };
          entries.push({ ms: log.blockNumber * 100 + log.index, kind: "event", source: "chain", data });
        }
      }
      entries.sort((a, b) => a.ms - b.ms);
      return parseRecording(entries.map(encodeEntry).join("\n")).entries;
    }

    /** `npm start`'s closing table for `who` (demo/settlement.ts providerRows: the summary and the stake books). */
    function tableOf(ledger: Ledger, jobId: bigint, who: string) {
      const s = providerSummaries(ledger.jobs.get(jobId)!).find((x) => x.provider === who.toLowerCase());
      const row = {
        name: "x",
        stepsAccepted: s?.stepsAccepted ?? 0,
        checkpointsRefused: s?.checkpointsRefused ?? 0,
        earned: s?.earned ?? 0n,
        withdrawn: 0n,
        stake: stakeBookOf(ledger, who),
        why: s?.why ?? "never assigned",
      };
      const [header, , line] = formatTable([row]);
      const stakeHeader = /stake USDC (\S.*?\S) {2}/.exec(header)![1].split("/");
      return { earned: line.split(/ {2,}/)[3], stakeHeader, stakeCell: stakeCell(row) };
    }

    it("what the slashed provider earned: the chain's figure on explain, wallet, npm start's table and the dashboard", async function () {
      const { p, jobId, ledger, entries } = await run();
      const who = p.provider1.address;
      const onChain = (await p.escrow.earningsOf(jobId, who)) + 0n; // nothing released yet
      expect(onChain).to.equal(0n); // the 9,000 accepted were voided by the slash
      const explain = providerSummaries(ledger.jobs.get(jobId)!).find((s) => s.provider === who.toLowerCase())!;
      const wallet = walletFacts(ledger, who).jobs.find((j) => j.jobId === jobId)!.provider!;
      const table = tableOf(ledger, jobId, who);
      const dashboard = foldAll(entries).providers.get(who.toLowerCase())!;
      expect({
        explain: explain.earned,
        wallet: wallet.earned,
        table: table.earned,
        dashboard: dashboard.earned,
      }).to.deep.equal({ explain: onChain, wallet: onChain, table: usdcAmount(onChain), dashboard: onChain });
      expect(dashboard.accepted, "the accepted steps still count").to.equal(10);
    });

    it("its stake: one word per figure, the table's and the wallet's, and the registry's numbers", async function () {
      const { p, jobId, ledger } = await run();
      const who = p.provider1.address;
      const chain = await p.registry.stakeOf(who);
      const book = stakeBookOf(ledger, who);
      expect([book.paidIn, book.slashed, book.deposited]).to.deep.equal([STAKE, MIN_STAKE, chain.deposited]);
      const table = tableOf(ledger, jobId, who);
      expect(table.stakeHeader).to.deep.equal([STAKE_LABELS.paidIn, STAKE_LABELS.slashed, STAKE_LABELS.held]);
      expect(table.stakeCell).to.equal([STAKE, MIN_STAKE, chain.deposited].map(usdcAmount).join(" / "));
      // The wallet (CLI and dashboard) says the registry's figure under the word the table gives it.
      const wallet = stakeSentence(walletFacts(ledger, who).stake!);
      expect(wallet).to.contain(`${table.stakeHeader[2]} ${usdcAmount(chain.deposited)} USDC`);
      expect(wallet).to.not.contain(usdcAmount(STAKE)); // what it paid in is not its stake now
    });

    it("the provider short of stake: the same reason from job create / explain, the coordinator and the chain", async function () {
      const { p, waiting, ledger } = await run();
      const offer = await offerOf(p, p.provider4);
      const terms = await termsOf(p, waiting);
      const others = await Promise.all([p.provider1, p.provider2, p.provider3].map((s) => offerOf(p, s)));
      // The other providers are taken out of the job's way (price): only provider4's stake keeps it waiting.
      const cheap = { ...terms, maxPricePerStep: 500n, budget: 500n * BigInt(terms.totalSteps) };
      expect(others.every((o) => termsRefusal(cheap, o) === "price above max")).to.equal(true);
      const fit = jobFit(cheap, [...others, offer]);
      expect(fit.fitting).to.deep.equal([]);
      expect(fit.reasons.map((r) => r.kind)).to.deep.equal(["stake short"]);
      expect(describeWait(fit.reasons[0])).to.equal(
        `provider ${p.provider4.address} has 0.500000 USDC of free stake; a hold of this job locks 1.000000 USDC ` +
          "(its price × the checkpoint interval, at least the network minimum)",
      );
      expect(await coordinatorSays(p, waiting, offer)).to.equal("stake short");
      expect(await assignRefusedForStake(p, waiting, p.provider4)).to.equal(true);
      // Its wallet says the stake it holds, under the same word.
      expect(stakeSentence(walletFacts(ledger, p.provider4.address).stake!)).to.match(
        new RegExp(`^${STAKE_LABELS.held} 0\\.500000 USDC, `),
      );
      expect(DEFAULT_REQUEST.checkpointInterval * 500).to.be.lessThan(Number(MIN_STAKE)); // the minimum is the lock
    });
  });

  describe("when a deadline turns a status: ledger statusAt, finalizer derivedStatus, settleTiming vs statusOf", function () {
    it("DisputeWindow at the deadline, Settleable from the second after", async function () {
      const p = await networkHelpers.loadFixture(deployProtocol);
      const { jobId } = await runToVerdict(p);
      const ledger = await escrowLedger(p.escrow, 0, { registry: p.registry });
      const job = ledger.jobs.get(jobId)!;
      const deadline = deadlineOf(job);
      expect(deadline).to.equal(job.verdict!.disputeDeadline);
      const timing = settleTiming({
        status: "DisputeWindow",
        verdictAt: deadline - DEFAULT_REQUEST.disputeWindow,
        disputeWindow: DEFAULT_REQUEST.disputeWindow,
        disputeOpenedAt: 0n,
        arbiterTimeout: 0n,
      });
      expect(timing).to.deep.include({ kind: "at", from: deadline + 1n });
      for (const t of [deadline, deadline + 1n]) {
        await networkHelpers.time.increaseTo(t);
        const chain = statusName(await p.escrow.statusOf(jobId));
        expect(statusName(statusAt(job, t)), `ledger at ${t - deadline}`).to.equal(chain);
        expect(statusAtDeadline("DisputeWindow", deadline, t)).to.equal(chain);
        expect(derivedStatus("DisputeWindow", deadline, t) ?? "DisputeWindow", "finalizer").to.equal(chain);
        expect(chain === "Settleable", "settleTiming's first second").to.equal(t >= (timing as { from: bigint }).from);
      }
    });
  });

  describe("figures that look alike on the committed char-transformer recording", function () {
    const { entries } = parseRecording(readFileSync("recordings/char-transformer.jsonl", "utf8"));
    const state = foldAll(entries);
    const summary = state.summary!.join("\n");

    it("the last checkpoint's loss (verifiers' float check) and the verdict's loss are two facts under two words", function () {
      const last = state.heldoutLoss.get("1")!.at(-1)!;
      expect([last.step, last.loss.toFixed(4)]).to.deep.equal([600, "1.9609"]);
      const verdict = state.events.find((e) => e.name === "VerdictSubmitted")!;
      expect(String(verdict.args.metric)).to.equal("19626"); // the portable graph's, signed by the verifiers
      expect(summary).to.contain("final model: 1.9626 nats per symbol held-out loss");
      expect(FACT_LABELS.checkpointLoss).to.not.contain("held-out loss"); // the verdict's words
    });

    it("alice's last reported step (the dashboard) and her per-step record (the closing table) are two facts under two words", function () {
      const alice = [...state.providers.values()].find((p) => p.name === "alice")!;
      const reported = Math.max(
        ...state.loss
          .get("1")!
          .filter((l) => l.provider === alice.key)
          .map((l) => l.step),
      );
      const table = Number(/alice trained to step (\d+)/.exec(summary)![1]);
      expect([reported, table]).to.deep.equal([125, 146]); // 21 steps trained after her last progress line
      expect(FACT_LABELS.lastReportedStep.toLowerCase()).to.not.contain("trained");
    });
  });
});
