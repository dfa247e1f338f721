/**
 * No assignment after a slash until re-staked, pure (sdk/rules/restake.ts, keepers/coordinator/decide.ts, sdk/rules/jobFit.ts): a
 * provider slashed for a proven fault is not assigned again until a stake deposit lands after its latest slash. The
 * boundaries, decided here: "after" is chain order — a deposit in an earlier block never counts; in the slash's own
 * block it counts only when its log comes after the slash's (log index), not at or before it; any later block counts.
 * Each slash needs its own deposit after it.
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import { planCoordinator, type CoordinatorView, type ProviderView } from "../../keepers/coordinator/decide.ts";
import { describeWait, jobFit } from "../../sdk/rules/jobFit.ts";
import {
  awaitsRestake,
  RESTAKE_STATUS,
  RestakeBook,
  restakeBookOf,
  restakeLine,
  type SlashMark,
} from "../../sdk/rules/restake.ts";
import { openJob } from "../helpers/jobs.ts";

const NOW = 1_000_000;
const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const at = (blockNumber: number, logIndex: number) => ({ blockNumber, logIndex });
const SLASH: SlashMark = { ...at(100, 5), jobId: 7n, at: 1_764_633_600n }; // 2025-12-02T00:00:00Z

function provider(n: number, price: bigint): ProviderView {
  return {
    address: addr(n),
    pricePerStep: price,
    memoryMiB: 1024,
    active: true,
    registered: true,
    stakeFree: 100_000n,
  };
}

/** One Open job, providers idle and beating, the re-stake rule from `book`. */
function view(providers: ProviderView[], book: RestakeBook, jobs = [openJob({ templateId: "0x" + "ab".repeat(32) })]) {
  return {
    nowMs: NOW,
    chainTime: 1_000n,
    timeoutMs: 5_000,
    isCoordinator: true,
    jobs,
    providers,
    lastBeat: new Map(providers.map((p) => [p.address.toLowerCase(), { receivedAt: NOW, jobId: "0", epoch: "0" }])),
    lastJobBeat: new Map(),
    watchStart: new Map(),
    fenced: new Map(),
    memoryNeedMiB: () => 0,
    minStake: 1n,
    restake: book.waiting,
  } satisfies CoordinatorView;
}

describe("slashed providers wait for a re-stake (pure rule)", function () {
  it("boundaries: a deposit counts only strictly after the slash in chain order (block, then log index)", function () {
    const cases: [string, { blockNumber: number; logIndex: number } | undefined, boolean][] = [
      ["no deposit at all", undefined, true],
      ["an earlier block (even a later log index)", at(99, 9), true],
      ["the same block, an earlier log", at(100, 4), true],
      ["the same block, the same log (not a deposit after it)", at(100, 5), true],
      ["the same block, a later log", at(100, 6), false],
      ["the next block (log 0)", at(101, 0), false],
    ];
    for (const [when, deposit, waits] of cases) expect(awaitsRestake(SLASH, deposit), when).to.equal(waits);
    expect(awaitsRestake(undefined, undefined), "never slashed").to.equal(false);
    expect(awaitsRestake(undefined, at(1, 0)), "never slashed").to.equal(false);
  });

  it("the book keeps the latest of each, whatever the order it is told them in; each slash needs its own deposit", function () {
    const p = addr(1);
    const inOrder = new RestakeBook();
    inOrder.deposited(p, at(10, 0)); // the initial stake
    expect(inOrder.awaiting(p)).to.equal(undefined);
    inOrder.slashed(p, SLASH);
    expect(inOrder.awaiting(p)).to.equal(SLASH);
    inOrder.deposited(p, at(100, 6));
    expect(inOrder.awaiting(p.toLowerCase())).to.equal(undefined);
    const second: SlashMark = { ...at(120, 1), jobId: 8n };
    inOrder.slashed(p, second);
    expect(inOrder.awaiting(p), "a deposit before the second slash does not count for it").to.equal(second);
    // The same four events told backwards: the same answer (a log folded late or twice changes nothing).
    const backwards = new RestakeBook();
    for (const [name, mark] of [
      ["StakeSlashed", second],
      ["StakeDeposited", at(100, 6)],
      ["StakeSlashed", SLASH],
      ["StakeDeposited", at(10, 0)],
      ["StakeSlashed", SLASH],
    ] as const)
      backwards.apply(name, p, mark);
    expect(backwards.awaiting(p)).to.equal(second);
    expect([...backwards.waiting.keys()]).to.deep.equal([p.toLowerCase()]);
  });

  it("the coordinator does not assign a slashed provider with stake left, names it in the wait line, assigns it after a deposit", function () {
    const slashed = provider(1, 900n); // the cheapest; its free stake covers the lock (9,000)
    const honest = provider(2, 1_000n);
    const book = new RestakeBook();
    book.deposited(slashed.address, at(10, 0));
    book.slashed(slashed.address, SLASH);
    // With an honest control: the control takes the job, never the (cheaper) slashed one.
    const both = planCoordinator(view([slashed, honest], book));
    expect(both.map((d) => [d.action, d.provider])).to.deep.equal([["assign", honest.address]]);
    // Alone: the job waits, and the line says who, when and where it was slashed.
    const alone = planCoordinator(view([slashed], book))[0];
    expect(alone.action).to.equal("wait");
    expect(alone.reason).to.equal(
      `no eligible provider (awaiting re-stake after a slash ×1): provider ${slashed.address}: slashed at block 100 ` +
        `(2025-12-02T00:00:00Z) on job 7, not assigned until it re-stakes`,
    );
    // A deposit in the slash's block but logged before it does not lift it; one logged after it does.
    book.deposited(slashed.address, at(100, 4));
    expect(planCoordinator(view([slashed], book))[0].action).to.equal("wait");
    book.deposited(slashed.address, at(100, 6));
    expect(planCoordinator(view([slashed], book))[0]).to.deep.include({ action: "assign", provider: slashed.address });
    // Without the rule's input (a view that does not carry it), no exclusion: what a pure caller gets by default.
    const without = { ...view([slashed], new RestakeBook()), restake: undefined };
    expect(planCoordinator(without)[0].action).to.equal("assign");
  });

  it("names at most three slashed providers in a wait line and counts the rest", function () {
    const book = new RestakeBook();
    const providers = [1, 2, 3, 4, 5].map((n) => provider(n, 900n));
    providers.forEach((p, i) => book.slashed(p.address, { ...at(200 + i, 0) }));
    const d = planCoordinator(view(providers, book))[0];
    expect(d.reason).to.contain("(awaiting re-stake after a slash ×5)");
    expect(d.reason.match(/not assigned until it re-stakes/g)).to.have.length(3);
    expect(d.reason).to.contain("2 more provider(s) slashed and not assigned until they re-stake");
  });

  it("jobFit (explain): a slashed offer never fits; when only slashed offers fit the terms, one reason each", function () {
    const job = { totalSteps: 100, acceptedStep: 0, maxPricePerStep: 1_000n, budget: 100_000n, paid: 0n };
    const offer = (n: number, price: bigint, slashed?: SlashMark) => ({
      address: addr(n),
      pricePerStep: price,
      memoryMiB: 1024,
      active: true,
      slashed,
    });
    const mixed = jobFit(job, [offer(1, 900n, SLASH), offer(2, 1_000n)]);
    expect(mixed.fitting.map((o) => o.address)).to.deep.equal([addr(2)]);
    expect(mixed.reasons).to.deep.equal([]);
    expect(mixed.awaitingRestake.map((o) => o.address)).to.deep.equal([addr(1)]);
    const onlySlashed = jobFit(job, [offer(1, 900n, SLASH), offer(2, 2_000n)]);
    expect(onlySlashed.fitting).to.deep.equal([]);
    expect(onlySlashed.reasons.map(describeWait)).to.deep.equal([restakeLine(addr(1), SLASH)]);
    // A slashed offer that does not fit the terms anyway is not named: the terms are the reason.
    expect(jobFit(job, [offer(1, 2_000n, SLASH)]).reasons[0].kind).to.equal("price above every offer");
  });

  it("the dashboard's fold: registry events as the live stream carries them, with or without log indexes", function () {
    const p = addr(3);
    const ev = (name: string, blockNumber: number, logIndex?: number) => ({
      name,
      args: { provider: p, jobId: "4", amount: "1000000", deposited: "9000000" },
      blockNumber,
      logIndex,
      contract: "registry" as const,
    });
    const waiting = restakeBookOf([ev("StakeDeposited", 5, 0), ev("ProviderSlashed", 9, 1), ev("StakeSlashed", 9, 2)]);
    expect(waiting.awaiting(p)).to.deep.equal({ blockNumber: 9, logIndex: 2, jobId: 4n, amount: 1_000_000n });
    expect(restakeBookOf([ev("StakeSlashed", 9, 2), ev("StakeDeposited", 10, 0)]).awaiting(p)).to.equal(undefined);
    // A recording without log indexes: the list's own order places events of one block.
    expect(restakeBookOf([ev("StakeSlashed", 9), ev("StakeDeposited", 9)]).awaiting(p)).to.equal(undefined);
    expect(restakeBookOf([ev("StakeDeposited", 9), ev("StakeSlashed", 9)]).awaiting(p)).to.not.equal(undefined);
    expect(RESTAKE_STATUS).to.equal("slashed — waits for re-stake");
  });
});
