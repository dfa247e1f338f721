/**
 * The transformer template in a real Chromium: the committed char-transformer run (recordings/char-transformer.jsonl)
 * played back shows the template by name, the verdict in its own metric (held-out loss, not a percentage) and the text
 * sampled from every accepted checkpoint. The expected values are read from the recording itself.
 */
import { expect } from "chai";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardServer } from "../../dashboard/server/server.ts";
import { requireChromium } from "./browser.ts";
import { offlineDeployment, servedDashboard } from "./helpers.ts";

const RUN = "char-transformer.jsonl";

type Line = { ms: number; kind: string; source: string; data: Record<string, unknown> };

function runFacts() {
  const entries: Line[] = readFileSync(`recordings/${RUN}`, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const samples = new Map<number, string>();
  for (const e of entries)
    if (e.data?.msg === "checkpoint decided" && e.data.action === "accept" && typeof e.data.sample === "string")
      samples.set(Number(e.data.step), e.data.sample);
  const verdict = entries.find((e) => e.kind === "event" && e.data.name === "VerdictSubmitted")!;
  const metric = Number((verdict.data.args as { metric: string }).metric);
  return { end: Math.max(...entries.map((e) => e.ms)), samples, metric };
}

describe("dashboard: the char-transformer run in a real browser", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `dash-tx-${process.pid}`);
  const facts = runFacts();
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;

  before(async function () {
    requireChromium(this);
    ({ server, browser, page } = await servedDashboard({ deploymentFile: offlineDeployment(dir) }));
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("names the template, states the verdict as held-out loss and lists each accepted checkpoint's text", async function () {
    expect(facts.samples.size, "accepted checkpoints with a sample in the recording").to.be.at.least(6);
    await page.goto(`${server.url}?run=${RUN}&t=${facts.end}`);
    await page.locator(".page-head .badge-recorded").waitFor();
    // the template's name comes with the server's config, which may arrive after the recording's first frame
    await page.locator("#job-h", { hasText: "template char-transformer" }).waitFor();
    const loss = (facts.metric / 10_000).toFixed(4);
    await page.getByText(`verdict: ${loss} nats per symbol held-out loss (target ≤ 2)`).waitFor();
    expect(await page.getByText(/verdict .* %/).count(), "no percentage verdict line").to.equal(0);
    const items = page.getByTestId("samples").locator("li");
    expect(await items.count()).to.equal(facts.samples.size);
    const [lastStep, lastText] = [...facts.samples].sort((a, b) => a[0] - b[0]).at(-1)!;
    expect(await items.last().textContent()).to.equal(`step ${lastStep} ${lastText}`);
  });
});
