/**
 * "Live is the product": one short `npm start` run (blobs-tiny, one injected fault, so one refusal)
 * watched live in a real Chromium, and its own recording (this-run.jsonl, served by the same dashboard) played at
 * the same block beside it: the two Status pages say the same things — the refusal's reason, the held-out accuracy
 * of each accepted checkpoint, the text samples, the badges, the chain chip and every name.
 */
import { expect } from "chai";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { runScenario } from "../../demo/scenario.ts";
import { ensureBuilt } from "../../dashboard/server/build.ts";
import { launch, requireChromium } from "./browser.ts";
import { screenshot, SHOTS } from "./helpers.ts";

type Line = { ms: number; kind: string; source: string; data: Record<string, unknown> };

/** The live stream's entries that arrive within `ms` (it starts with the whole history, then stays open). */
async function liveStream(url: string, ms: number): Promise<Line[]> {
  const res = await fetch(`${url}api/stream`, { signal: AbortSignal.timeout(ms) });
  let text = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk);
  } catch {
    // the timeout ends the read
  }
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]) as Line);
}

/** What a Status page shows of one job, as text, in the order shown. */
interface Shown {
  block: string;
  chain: string;
  badges: string[];
  verification: string[];
  heldout: string[];
  samples: string[];
  wrong: string[];
  lanes: string[];
  events: string[];
}

const texts = async (page: Page, selector: string) =>
  (await page.locator(selector).allTextContents()).map((t) => t.replace(/\s+/g, " ").trim());

/** A table's rows as "cell | cell | …", the first `cells` cells of each. */
const rows = (page: Page, label: string, cells = 9) =>
  page.locator(`[aria-label="${label}"] tbody tr`).evaluateAll(
    (trs, n) =>
      trs.map((tr) =>
        [...tr.querySelectorAll("td")]
          .slice(0, n)
          .map((td) => (td.textContent ?? "").replace(/\s+/g, " ").trim())
          .join(" | "),
      ),
    cells,
  );

async function shown(page: Page): Promise<Shown> {
  const fresh = (await page.locator(".topbar .fresh").textContent()) ?? "";
  return {
    block: /block (\d+)/.exec(fresh)?.[1] ?? fresh,
    chain: (await texts(page, ".topbar .chip[title]"))[0].replace(/ \(recorded\)$/, ""),
    badges: (await texts(page, ".page-head .badges [role=listitem]")).filter((b) => b !== "Recorded"),
    verification: await rows(page, "Checkpoints and signatures"),
    heldout: (await texts(page, '[data-testid="curve-legend"] li')).filter((l) => l.startsWith("accepted checkpoint")),
    samples: await texts(page, '[data-testid="samples"] li'),
    wrong: await texts(page, '[data-testid="what-went-wrong"] li'),
    lanes: await texts(page, ".lane-name"),
    // block, event and sentence: the recording's events carry no transaction hash
    events: await rows(page, "Events", 3),
  };
}

describe("dashboard: live and the recording of the same run show the same", function () {
  this.timeout(900_000);
  const deploymentId = `dash-parity-${process.pid}`;
  const runDir = path.join(".gpuchain", `dash-parity-${process.pid}`);
  const lines: string[] = [];
  let live: Shown | undefined;
  let played: Shown | undefined;
  let recorded: Line[] = [];
  let streamed: Line[] = [];

  before(async function () {
    requireChromium(this);
    await ensureBuilt();
    let browser: Browser | undefined;
    await runScenario({
      template: "blobs-tiny",
      totalSteps: 40,
      checkpointInterval: 10,
      dispute: false,
      fault: "garbage-weights",
      kill: false,
      runDir,
      deploymentId,
      timeoutMs: 480_000,
      print: (l) => lines.push(l),
      beforeStop: async (net) => {
        const url = /dashboard: (http:\S+)/.exec(lines.join("\n"))?.[1];
        if (!url) throw new Error(`npm start printed no dashboard address:\n${lines.slice(0, 12).join("\n")}`);
        browser = await launch();
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const [livePage, playedPage] = [await context.newPage(), await context.newPage()];
        await livePage.goto(`${url}?job=${net.jobId}`);
        await livePage.locator('.strip li[aria-current="step"]', { hasText: "Settled" }).waitFor({ timeout: 60_000 });
        await livePage.waitForTimeout(3000); // the last keepers' and verifiers' lines, the last block
        await new Promise((r) => setTimeout(r, 500)); // the recording's file is written as the run goes
        recorded = readFileSync(path.join(runDir, "recording.jsonl"), "utf8")
          .split("\n")
          .filter((l) => l.endsWith("}")) // a line being written is left for the next read
          .map((l) => JSON.parse(l) as Line);
        const end = Math.max(...recorded.map((e) => e.ms));
        streamed = await liveStream(url, 3000);
        await playedPage.goto(`${url}?job=${net.jobId}&run=this-run.jsonl&t=${end}`);
        await playedPage.locator(".page-head .badge-recorded").waitFor();
        await playedPage.locator('.strip li[aria-current="step"]', { hasText: "Settled" }).waitFor();
        await playedPage.waitForTimeout(1500);
        [live, played] = [await shown(livePage), await shown(playedPage)];
        await screenshot(livePage, "parity-live");
        await screenshot(playedPage, "parity-recorded");
      },
    })
      .catch((err) => {
        console.log(lines.slice(-80).join("\n"));
        throw err;
      })
      .finally(() => browser?.close());
  });

  after(function () {
    rmSync(runDir, { recursive: true, force: true });
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  const both = () => {
    if (!live || !played) throw new Error(`the pages were not read:\n${lines.slice(-30).join("\n")}`);
    writeFileSync(path.join(SHOTS, "parity.json"), JSON.stringify({ live, played }, null, 1)); // for a failure's reader
    return { live, played };
  };

  it("at the same block, with the same chain chip and badges (Capped profile, Injected fault)", function () {
    const { live, played } = both();
    expect(live.block).to.equal(played.block);
    expect(live.chain).to.equal(played.chain);
    expect(live.badges).to.include.members(["Capped profile", "Injected fault", "Local chain", "Synthetic"]);
    expect(live.badges).to.deep.equal(played.badges);
  });

  it("the refusal with the verifiers' reason, and every checkpoint's row, alike", function () {
    const { live, played } = both();
    const refused = live.verification.filter((r) => / refused \|/.test(r));
    expect(refused, live.verification.join("\n")).to.have.length(1);
    expect(refused[0]).to.match(/replay-mismatch/);
    expect(live.verification).to.deep.equal(played.verification);
    expect(live.wrong).to.deep.equal(played.wrong);
  });

  it("the held-out accuracy of each accepted checkpoint and the text samples, alike", function () {
    const { live, played } = both();
    const accepted = recorded.filter(
      (e) => e.data?.msg === "checkpoint decided" && e.data.action === "accept" && typeof e.data.accuracy === "number",
    );
    expect(new Set(accepted.map((e) => e.data.step)).size)
      .to.equal(played.heldout.length)
      .and.to.be.above(0);
    expect(live.heldout).to.deep.equal(played.heldout);
    expect(live.samples).to.deep.equal(played.samples);
  });

  it("the live stream carries every line the recording has of the run (a text sample rides the same line)", function () {
    both();
    const key = (e: Line) => JSON.stringify([e.ms, e.kind, e.source, e.data]);
    const live = new Set(streamed.map(key));
    const runLines = recorded.filter((e) => ["badge", "log", "note", "summary"].includes(e.kind));
    expect(runLines.filter((e) => e.data?.msg === "checkpoint decided").length).to.be.above(0);
    expect(runLines.filter((e) => !live.has(key(e))).map(key)).to.deep.equal([]);
  });

  it("every name: providers, verifiers, the client", function () {
    const { live, played } = both();
    expect(live.events.find((l) => / JobCreated /.test(l))).to.match(/ posted by client: /);
    expect(live.events.find((l) => / OwnershipTransferred /.test(l))).to.match(/ to owner$/);
    expect(live.lanes).to.deep.equal(played.lanes);
    expect(live.events).to.deep.equal(played.events);
  });
});
