/**
 * The Status page in a real Chromium on the committed char-transformer recording (a run with a refusal, a slash and
 * a SIGKILL): the settlement card's figures equal the ledger's and the run's own table, the dispute window counts
 * down on the recording's clock with the command to copy, the loss is drawn per provider with the target, the lanes
 * and process health tell killed from stopped, and at phone width every table is cards and every tab reachable.
 * No chain runs: a recording needs none.
 */
import { expect } from "chai";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { freePort } from "../../demo/chain.ts";
import { bundleGzipKb } from "../../bench/dashboard.ts";
import { formatTime, usdcAmount } from "../../sdk/words/format.ts";
import { foldEscrowEvents, stakeBookOf, walletOf } from "../../sdk/rules/ledger.ts";
import { STAKE_LABELS } from "../../sdk/rules/stake.ts";
import { providerSummaries } from "../../sdk/words/narrative.ts";
import { clockAdvanceOf, parseRecording, type ChainEvent } from "../../sdk/run/recording.ts";
import { requireChromium } from "./browser.ts";
import { offlineDeployment, PAGE_IDS, screenshot, seriousViolations, servedDashboard } from "./helpers.ts";

const RUN = "char-transformer.jsonl";
/** How wide the page is, scrolled sideways included (evaluated in the page). */
const WIDTH = "document.documentElement.scrollWidth";

/** What the recording says, read from the file itself: events, names, the verdict and the run's own table. */
function runFacts() {
  const { entries } = parseRecording(readFileSync(`recordings/${RUN}`, "utf8"));
  const events = entries.filter((e) => e.kind === "event");
  const ledger = foldEscrowEvents(
    events.map((e, i) => {
      const d = e.data as ChainEvent;
      return { eventName: d.name, args: d.args, blockNumber: d.blockNumber, index: d.logIndex ?? i };
    }),
  );
  const names: Record<string, string> = {};
  for (const e of entries) {
    const d = e.data as { msg?: string; address?: string; verifier?: string };
    if (e.kind !== "log") continue;
    if (d.msg === "using provider key") names[d.address!.toLowerCase()] = e.source;
    if (d.msg === "verifier started") names[d.verifier!.toLowerCase()] = e.source;
  }
  const job = ledger.jobs.get(1n)!;
  const at = (name: string) => events.find((e) => (e.data as ChainEvent).name === name)!;
  const advance = entries.find((e) => e.kind === "note" && clockAdvanceOf(e.data) !== null)!;
  const kill = entries.find((e) => e.kind === "note" && /killed alice \(SIGKILL\)/.test(String(e.data)))!;
  const summary = entries.find((e) => e.kind === "summary")!.data as string[];
  const end = entries[entries.length - 1].ms;
  return { ledger, job, names, verdict: at("VerdictSubmitted"), advance, kill, summary, end };
}

/** A table's fixed 6-decimal USDC figure ("4.000000") in base units. */
const units = (cell: string) => BigInt(cell.replace(".", ""));

/** The run's own settlement table (`npm start`'s report, demo/report.ts) by provider name. */
function reportRows(summary: string[]): Map<string, string[]> & { newStakeColumn: boolean } {
  const head = summary.findIndex((l) => l.startsWith("provider  steps accepted"));
  // "deposited/slashed/left" before the figures had names of their own (sdk/rules/stake.ts STAKE_LABELS): the same three.
  const newStakeColumn = [
    "stake USDC deposited/slashed/left",
    `stake USDC ${STAKE_LABELS.paidIn}/${STAKE_LABELS.slashed}/${STAKE_LABELS.held}`,
  ].some((h) => summary[head].includes(h));
  const rows = Object.assign(new Map<string, string[]>(), { newStakeColumn });
  for (const line of summary.slice(head + 2)) {
    if (!line.trim()) break;
    const cells = line.split(/ {2,}/);
    rows.set(cells[0], cells);
  }
  return rows;
}

describe("dashboard: the Status page answers did it work, who got paid, what went wrong", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `dash-status-${process.pid}`);
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;
  const facts = runFacts();
  const open = async (t: number) => {
    await page.goto(`${server.url}?run=${RUN}&t=${t}`);
    await page.getByTestId("job-template").filter({ hasText: "template char-transformer" }).waitFor();
  };

  before(async function () {
    requireChromium(this);
    ({ server, browser, page } = await servedDashboard({ deploymentFile: offlineDeployment(dir) }));
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows the settlement card right after the job header, its figures those of the ledger and the run's table", async function () {
    await open(facts.end);
    // the first three cards: jobs, the job's header, then who got paid
    const order = await page.locator("main .grid > section h2").allTextContents();
    expect(order.slice(0, 3)).to.deep.equal(["Jobs", "Job 1 template char-transformer", "Who got paid, and why"]);
    const report = reportRows(facts.summary);
    const summaries = providerSummaries(facts.job, facts.names);
    expect(summaries.some((s) => s.slashed > 0n)).to.equal(true); // the run has a slash
    for (const s of summaries) {
      const name = facts.names[s.provider];
      const cells = await page.getByTestId(`settle-${name}`).locator("th, td").allTextContents();
      const withdrawn = walletOf(facts.ledger, s.provider).withdrawn;
      // The recording holds the registry's stake events, so the card shows the stake books too.
      const book = stakeBookOf(facts.ledger, s.provider);
      expect(cells, name).to.deep.equal([
        name,
        String(s.stepsAccepted),
        String(s.checkpointsRefused),
        usdcAmount(s.earned),
        usdcAmount(withdrawn),
        usdcAmount(s.slashed),
        `${usdcAmount(book.paidIn)} / ${usdcAmount(book.deposited)}`,
        s.why,
      ]);
      // npm start's own table: steps, refusals, earnings, withdrawn, the stake, why. Its stake column is
      // "deposited/slashed/left"; a run recorded before that had "deposited/locked/slashed", where deposited was
      // what was left (no stake is withdrawn during a run, so what was paid in is left + slashed).
      const [, steps, refused, earned, paidOut, stake, why] = report.get(name)!;
      const parts = stake.split(" / ");
      const [paidIn, slashed, left] = report.newStakeColumn
        ? parts
        : [usdcAmount(units(parts[0]) + units(parts[2])), parts[2], parts[0]];
      expect(
        [cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]],
        `${name} vs the run's table`,
      ).to.deep.equal([steps, refused, earned, paidOut, slashed, `${paidIn} / ${left}`, why]);
    }
    const outcome = await page.getByTestId("settlement-outcome").textContent();
    const settled = facts.job.settlement!;
    expect(outcome).to.equal(
      `Job 1 settled: providers paid ${usdcAmount(settled.providersPaid)} USDC, client refund ` +
        `${usdcAmount(settled.refund)} USDC; slashed and forfeited stake to the client 0.500000 USDC.`,
    );
  });

  it("says whether it worked, and what went wrong from the job's own events with the verifiers' reasons", async function () {
    await open(facts.end);
    // The run's own closing line names the same final model figure.
    const final = /^final model: (\d\.\d{4}) nats per symbol/.exec(
      facts.summary.find((l) => l.startsWith("final model: "))!,
    )!;
    expect(await page.getByTestId("did-it-work").textContent()).to.equal(
      `It worked: the final model passed the template's rules — ${final[1]} nats per symbol held-out loss (target ≤ 2).`,
    );
    const wrong = await page.getByTestId("what-went-wrong").locator("li").allTextContents();
    expect(wrong).to.have.length(3);
    expect(wrong[0]).to.match(/^Quality Guard refused mallory's step 100: .* — replay-mismatch: step 100 replays to/);
    expect(wrong[1]).to.match(/^mallory slashed: fault at step 100, found by verifier\d; 1\.000000 USDC of stake/);
    expect(wrong[2]).to.match(
      /^alice unassigned from job 1 \(the coordinator took the job away \(no heartbeat or no progress within its bounds\)\)/,
    );
  });

  it("counts the dispute window down on the recording's clock, with the dispute command, then says settleable", async function () {
    const deadline = BigInt((facts.verdict.data as ChainEvent).args.disputeDeadline as string);
    // 10 ms after the verdict: the window is open at the recording's moment, whatever today's date is
    await open(facts.verdict.ms + 10);
    expect(await page.locator('.strip li[aria-current="step"]').textContent()).to.equal("Dispute window");
    expect(await page.locator(".job-list button").textContent()).to.contain("Dispute window");
    expect(await page.getByTestId("dispute-deadline").textContent()).to.contain(
      `until ${formatTime(deadline)} (in 1 min, on the recording's clock)`,
    );
    expect(await page.getByTestId("dispute-command").textContent()).to.equal(
      "npx gpuchain dispute 1 --key CLIENT_KEY_FILE --rpc RPC_URL --deployment DEPLOYMENT_FILE",
    );
    await page.getByRole("button", { name: "Copy the dispute command" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    // the run advanced its chain's clock by 61 s: from then on the window is over, before any settle
    await open(facts.advance.ms + 10);
    expect(await page.locator(".job-list button").textContent()).to.contain("Settleable");
    expect(await page.getByTestId("settle-timing").textContent()).to.match(/^Settleable now: its dispute window/);
    expect(await page.getByTestId("settle-command").textContent()).to.match(/^npx gpuchain settle 1 --key/);
    await open(facts.end);
    expect(await page.getByTestId("dispute-deadline").textContent()).to.equal(
      `The dispute window ended at ${formatTime(deadline)} without a dispute.`,
    );
  });

  it("draws the loss per provider, broken at the failovers, with the template's target", async function () {
    await open(facts.end);
    const legend = page.getByTestId("curve-legend");
    for (const [name, steps] of [
      ["mallory", /steps 1–\d+$/],
      ["alice", /steps 1–\d+$/],
      ["bob", /steps 10\d–600$/],
    ] as const)
      expect(await legend.getByTestId(`curve-${name}`).textContent(), name).to.match(steps);
    const colours = await page.evaluate<string[]>(
      `[...document.querySelectorAll('[data-testid="curve-legend"] [data-testid^=curve-] .swatch')]` +
        ".map((x) => getComputedStyle(x).backgroundColor)",
    );
    expect(new Set(colours).size).to.equal(colours.length); // one colour each, the target's its own
    expect(await legend.getByTestId("curve-target").textContent()).to.contain("target: held-out loss ≤ 2");
    // uPlot's legend: the x axis, one line per provider run, the held-out loss
    expect(await page.locator(".u-legend .u-series").count()).to.equal(5);
  });

  it("puts the lanes on a time axis and tells the killed provider from the stopped ones", async function () {
    await open(facts.kill.ms + 1000);
    expect(await page.getByTestId("health-alice").textContent()).to.contain("killed (SIGKILL)");
    expect(await page.getByTestId("health-bob").textContent()).to.contain("running");
    for (const k of ["coordinator", "collector", "finalizer", "reserves"])
      expect(await page.getByTestId(`health-${k}`).count(), k).to.equal(1);
    await open(facts.end);
    const lanes = await page.getByTestId("lane-text").locator("li").allTextContents();
    expect(lanes.join("\n")).to.match(/mallory held job 1 in epoch 1 .*fenced \(its checkpoint was refused\)/);
    expect(lanes.join("\n")).to.match(/alice held job 1 in epoch 3 .*failed over \(taken away by the coordinator\)/);
    expect(lanes.join("\n")).to.match(/alice killed \(SIGKILL\) at \d+:\d\d/);
    expect(await page.locator(".lane-track .hb-dot").count()).to.be.greaterThan(10);
    expect(await page.locator(".lane-track .fence-mark").count()).to.equal(2);
    expect(await page.getByTestId("health-bob").textContent()).to.contain("stopped");
  });

  it("at phone width: every table one card per row, every tab reachable, nothing wider than the screen", async function () {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const q = await phone.newPage();
    try {
      await q.goto(`${server.url}?run=${RUN}&t=${facts.end}`);
      await q.getByTestId("job-template").filter({ hasText: "template char-transformer" }).waitFor();
      const cell = `document.querySelector('[data-testid="settle-mallory"]')`;
      expect(await q.evaluate<string>(`getComputedStyle(${cell}).display`)).to.equal("block");
      const label = await q.evaluate<string>(`getComputedStyle(${cell}.querySelectorAll("td")[4], "::before").content`);
      expect(label).to.equal('"Stake slashed USDC"');
      expect(await q.evaluate<number>(WIDTH)).to.be.at.most(390);
      for (const id of PAGE_IDS) {
        const tab = q.getByRole("navigation", { name: "Pages" }).locator(`a[href^="?page=${id}"]`);
        const box = (await tab.boundingBox())!;
        expect(box.x >= 0 && box.x + box.width <= 390, `${id} tab on screen`).to.equal(true);
        await tab.click();
        await q.waitForFunction(`document.querySelector('nav a[href^="?page=${id}"]')?.ariaCurrent === "page"`);
        expect(await q.evaluate<number>(WIDTH), `${id} width`).to.be.at.most(390);
      }
      await q.goto(`${server.url}?run=${RUN}&t=${facts.end}`);
      await q.getByTestId("job-template").filter({ hasText: "template char-transformer" }).waitFor();
      await q.waitForTimeout(300);
      await screenshot(q, "small-phone-status-char-transformer", false);
    } finally {
      await phone.close();
    }
  });

  it("saves a small picture of Status, wide and on a phone (docs/screenshots/status.png, phone-status.png)", async function () {
    const small = await browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 0.6 });
    try {
      const p = await small.newPage();
      await p.goto(`${server.url}?run=${RUN}&t=${facts.end}`);
      await p.getByTestId("job-template").filter({ hasText: "template char-transformer" }).waitFor();
      await p.waitForTimeout(500);
      await screenshot(p, "small-status-char-transformer", false);
    } finally {
      await small.close();
    }
  });

  it("says a record's books cannot be rebuilt, never 'no job posted', when it lacks the events they need", async function () {
    // the recording without its set-up events: the slash names no fee recipient, so the books are unknown
    const lines = readFileSync(`recordings/${RUN}`, "utf8")
      .split("\n")
      .filter(
        (l) => !/"name":"(FeeRecipientSet|CoordinatorSet|ArbiterSet|TemplateApprovalSet|OwnershipTransferred)"/.test(l),
      );
    const partialDir = path.join(dir, "partial");
    mkdirSync(partialDir, { recursive: true });
    writeFileSync(path.join(partialDir, "partial.jsonl"), lines.join("\n"));
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    const own = await startDashboardServer({
      rpc: dead,
      deploymentFile: offlineDeployment(path.join(dir, "partial-dep")),
      coordinatorUrl: dead,
      collectorUrl: dead,
      recordingsDir: partialDir,
    });
    try {
      await page.goto(`${own.url}?run=partial.jsonl&t=${facts.end}`);
      const text = page.getByTestId("no-jobs");
      await text.filter({ hasText: "cannot be rebuilt" }).waitFor();
      expect(await text.textContent()).to.not.contain("No job posted");
      expect(await page.getByText("JobCreated", { exact: true }).count()).to.be.greaterThan(0);
    } finally {
      await own.close();
    }
  });

  it("live: when the server stops answering, Status greys what it showed and says as of when", async function () {
    const live = await servedDashboard({ deploymentFile: offlineDeployment(path.join(dir, "live")) });
    let closed = false;
    try {
      await live.page.goto(live.server.url);
      // the snapshot arrived: the coordinator behind it is down (nothing listens), every keeper is listed
      await live.page.getByTestId("health-coordinator").filter({ hasText: "not answering" }).waitFor();
      for (const k of ["collector", "finalizer", "reserves"])
        expect(await live.page.getByTestId(`health-${k}`).count(), k).to.equal(1);
      expect(await live.page.getByTestId("stream-stale").count()).to.equal(0);
      await live.server.close();
      closed = true;
      const stream = live.page.getByTestId("stream-stale");
      await stream.waitFor({ timeout: 20_000 });
      expect(await stream.textContent()).to.match(/event stream is not answering: .* as of /);
      const health = live.page.getByTestId("health-stale");
      await health.waitFor({ timeout: 20_000 });
      expect(await health.textContent()).to.match(/these rows are as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
      expect(await live.page.locator(".health.greyed").count()).to.equal(1);
    } finally {
      await live.browser.close();
      if (!closed) await live.server.close();
    }
  });

  it("keeps the built app within 250 kB gzipped (the bench's own measure)", function () {
    // the server above built dashboard/dist from the current sources
    const kb = bundleGzipKb();
    console.log(`      dashboard_bundle_gzip_kb: ${kb}`);
    expect(kb).to.be.at.most(250);
  });

  it("has no serious accessibility violation on Status, wide or phone-width, in the window and after", async function () {
    const found: string[] = [];
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const t of [facts.verdict.ms + 10, facts.end]) {
        await open(t);
        await page.waitForTimeout(300);
        for (const v of await seriousViolations(page)) found.push(`t=${t} @${width}px: ${v}`);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(found).to.deep.equal([]);
  });
});
