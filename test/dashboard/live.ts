/**
 * The dashboard against a real local network (the `npm start` scenario, short: hardhat node, Ignition, keepers,
 * three verifiers, three providers), in a real Chromium. The browser checks run while the network is still up
 * (the scenario's `beforeStop`); each `it` then reports one of them.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { runScenario } from "../../demo/scenario.ts";
import { freePort } from "../../demo/chain.ts";
import { runToEnd } from "../../demo/processes.ts";
import { startDashboardServer } from "../../dashboard/server/server.ts";
import { ensureBuilt } from "../../dashboard/server/build.ts";
import { loadKey } from "../../sdk/run/keys.ts";
import { sleep } from "../../sdk/run/retry.ts";
import { chromiumMissing, launch, requireChromium } from "./browser.ts";
import { PAGE_IDS, screenshot, seriousViolations, units } from "./helpers.ts";

type Check = () => Promise<void>;

describe("dashboard: a live local network in a real browser", function () {
  this.timeout(900_000);
  const deploymentId = `dash-${process.pid}`;
  const runDir = path.join(".gpuchain", `dash-live-${process.pid}`);
  const providerName = `dash-${process.pid}`;
  const outcome = new Map<string, Error | null>();
  const lines: string[] = [];

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
        const page = await context.newPage();
        const common = ["--rpc", net.rpc, "--deployment", net.deploymentFile];
        const run = async (name: string, check: Check) => {
          try {
            await check();
            outcome.set(name, null);
          } catch (err) {
            outcome.set(name, err as Error);
            await screenshot(page, `failed-${name}`).catch(() => {});
          }
        };
        await run("job", () => jobFacts(page, url, net));
        await run("wallet", () => walletCheck(page, url, net, common));
        await run("reserves", () => reserves(page, url, common));
        await run("figures", () => sameFigures(page, url, net, common));
        await run("provide", () => provideCommand(page, url, { ...net, runDir }, providerName, common));
        await run("chain", () => chainUnreachable(page, url, net.rpc));
        await run("coordinator", () => coordinatorKilled(context, net, common));
        await run("axe", () => accessibility(page, url));
      },
    })
      .catch((err) => {
        console.log(lines.slice(-80).join("\n")); // what the network said before it failed
        throw err;
      })
      .finally(() => browser?.close());
  });

  after(function () {
    rmSync(runDir, { recursive: true, force: true });
    rmSync(path.join(".gpuchain", "providers", providerName), { recursive: true, force: true });
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  const report = (name: string) => () => {
    if (!outcome.has(name))
      throw new Error(`the check did not run (the network did not reach settlement):\n${lines.slice(-30).join("\n")}`);
    const err = outcome.get(name);
    if (err) throw err;
  };

  it("npm start prints the dashboard address among its first lines", function () {
    const i = lines.findIndex((l) => /^dashboard: http:\/\/127\.0\.0\.1:\d+\/$/.test(l));
    expect(i, lines.slice(0, 12).join("\n")).to.be.within(0, 8);
  });
  it("Status shows the job's accepted steps and payouts equal to the contract's", report("job"));
  it("Check any wallet equals `gpuchain wallet` for the same address", report("wallet"));
  it("proof of reserves equals `gpuchain reserves`", report("reserves"));
  it(
    "every wallet figure (owed, withdrawn, stake, each job as provider or client and why) is the same in `gpuchain wallet`, live and played back",
    report("figures"),
  );
  it(
    "the Provide compute command, run as shown with no hand step, registers, is followed to its first accepted step and earns",
    report("provide"),
  );
  it(
    "RPC answering 429, then down → Chain unreachable with last values kept, then it recovers by itself",
    report("chain"),
  );
  it("coordinator killed → Coordinator offline, and the switch to the recorded run works", report("coordinator"));
  it("has no serious accessibility violation on any live page", report("axe"));
  void chromiumMissing;
});

interface Net {
  rpc: string;
  deploymentFile: string;
  jobId: bigint;
  protocol: Awaited<Parameters<NonNullable<Parameters<typeof runScenario>[0]["beforeStop"]>>[0]>["protocol"];
  provider: Awaited<Parameters<NonNullable<Parameters<typeof runScenario>[0]["beforeStop"]>>[0]>["provider"];
}

async function jobFacts(page: Page, url: string, net: Net) {
  const job = await net.protocol.escrow.jobOf(net.jobId);
  await page.goto(`${url}?job=${net.jobId}`);
  await page.getByTestId("job-chain-read").getByText("Read by this page at block").waitFor({ timeout: 20_000 });
  await page.locator('.strip li[aria-current="step"]', { hasText: "Settled" }).waitFor({ timeout: 20_000 });
  expect(await page.getByTestId("accepted-steps").textContent()).to.equal(`${job.acceptedStep} of ${job.totalSteps}`);
  expect(units((await page.getByTestId("paid").textContent())!)).to.equal(job.paid);
  const read = (await page.getByTestId("job-chain-read").textContent())!;
  expect(read).to.contain(`accepted step ${job.acceptedStep}`);
  expect(job.paid > 0n).to.equal(true);
  for (const id of PAGE_IDS) {
    await page.goto(`${url}?page=${id}`);
    await page.locator("h1").waitFor();
    await page.waitForTimeout(1500);
    await screenshot(page, `live-${id}`);
  }
}

async function walletCheck(page: Page, url: string, net: Net, common: string[]) {
  const accepted = await net.protocol.escrow.queryFilter(net.protocol.escrow.filters.CheckpointAccepted(net.jobId));
  const who = accepted[0].args.provider;
  const cli = await runToEnd(["cli/gpuchain.ts", "wallet", who, ...common]);
  expect(cli.code, cli.output).to.equal(0);
  const line = (label: string) => units(new RegExp(`${label}: ([\\d.]+) USDC`).exec(cli.output)![1]);
  await page.goto(`${url}?page=onchain`);
  await page.getByLabel("Address").fill(who);
  await page.getByRole("button", { name: "Check" }).click();
  await page.getByTestId("wallet-result").getByText("Read by this browser at block").waitFor({ timeout: 20_000 });
  expect(units((await page.getByTestId("wallet-withdrawable").textContent())!)).to.equal(line("withdrawable now"));
  expect(units((await page.getByTestId("wallet-withdrawn").textContent())!)).to.equal(line("withdrawn so far"));
  expect(line("withdrawn so far") > 0n).to.equal(true);
  expect(await page.getByTestId("wallet-result").textContent()).to.contain("Events and state agree.");
}

/** What a wallet shows a person, from the CLI's lines or the page's "Check any wallet" (sdk/rules/walletFacts.ts). */
interface WalletShown {
  withdrawable: bigint;
  withdrawn: bigint;
  stake: string | null;
  jobs: string[];
}

function cliWallet(output: string): WalletShown {
  const amount = (label: string) => units(new RegExp(`${label}: ([\\d.]+) USDC`).exec(output)![1]);
  return {
    withdrawable: amount("withdrawable now"),
    withdrawn: amount("withdrawn so far"),
    stake: /^ {2}stake in the registry: (.*)$/m.exec(output)?.[1] ?? null,
    jobs: [...output.matchAll(/^ {2}(job \d+ as (?:provider|client): .*)$/gm)].map((m) => m[1]),
  };
}

async function pageWallet(page: Page, address: string): Promise<WalletShown> {
  await page.getByLabel("Address").fill(address);
  await page.getByRole("button", { name: "Check" }).click();
  const result = page.getByTestId("wallet-result");
  await result.getByRole("heading", { name: new RegExp(address) }).waitFor({ timeout: 20_000 });
  const stake = page.getByTestId("wallet-stake");
  return {
    withdrawable: units((await page.getByTestId("wallet-withdrawable").textContent())!),
    withdrawn: units((await page.getByTestId("wallet-withdrawn").textContent())!),
    stake: (await stake.count()) ? (await stake.textContent())! : null,
    jobs: await page.getByTestId("wallet-jobs").locator("li").allTextContents(),
  };
}

/** The client and every registered provider: `gpuchain wallet` = the live page = the same run played back. */
async function sameFigures(page: Page, url: string, net: Net, common: string[]) {
  const { escrow, registry } = net.protocol;
  const job = await escrow.jobOf(net.jobId);
  const providers = (await registry.queryFilter(registry.filters.ProviderRegistered())).map((e) => e.args.provider);
  let seen = 0;
  for (const address of [job.client, ...providers]) {
    const cli = await runToEnd(["cli/gpuchain.ts", "wallet", address, ...common]);
    expect(cli.code, cli.output).to.equal(0);
    const shown = cliWallet(cli.output);
    // Not an empty comparison: the client and each provider that took part have their jobs, each provider a stake.
    if (address !== job.client) expect(shown.stake, cli.output).to.be.a("string");
    seen += shown.jobs.length;
    await page.goto(`${url}?page=onchain`);
    expect(await settled(() => pageWallet(page, address), shown), `live page, ${address}`).to.deep.equal(shown);
    await page.goto(`${url}?page=onchain&run=this-run.jsonl&t=999999999`);
    await page.locator(".page-head .badge-recorded").waitFor();
    // The recording loads after the page: asked again until it stops changing (or equals), then compared.
    expect(await settled(() => pageWallet(page, address), shown), `played back, ${address}`).to.deep.equal(shown);
  }
  expect(seen, "job sentences compared").to.be.at.least(3); // the client, the slashed provider, a paid one
}

/** `read()` until it equals `want` or 20 s pass; the last reading. */
async function settled<T>(read: () => Promise<T>, want: T): Promise<T> {
  let last = await read();
  for (let i = 0; i < 20 && JSON.stringify(last, big) !== JSON.stringify(want, big); i++) {
    await sleep(1_000);
    last = await read();
  }
  return last;
}

const big = (_: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);

async function reserves(page: Page, url: string, common: string[]) {
  const cli = await runToEnd(["cli/gpuchain.ts", "reserves", ...common]);
  expect(cli.code, cli.output).to.equal(0);
  await page.goto(`${url}?page=onchain`);
  await page.getByTestId("reserves-verdict").waitFor({ timeout: 20_000 });
  const held = units(/held: +([\d.]+) USDC/.exec(cli.output)![1]);
  const owed = units(/owed: +([\d.]+) USDC/.exec(cli.output)![1]);
  expect(units((await page.getByTestId("reserves-held").textContent())!)).to.equal(held);
  expect(units((await page.getByTestId("reserves-owed").textContent())!)).to.equal(owed);
  // The parts of what is owed add up to it, stakes included, on the page and in the CLI alike.
  const sum = (text: string) =>
    [...text.matchAll(/(?:budgets|bonds|withdrawable|stakes) ([\d.]+)/g)].reduce((t, m) => t + units(m[1]), 0n);
  expect(sum((await page.getByTestId("reserves-parts").textContent())!)).to.equal(owed);
  expect(sum(/owed: .*\((.*)\)/.exec(cli.output)![1])).to.equal(owed);
  expect(await page.getByTestId("reserves-verdict").textContent()).to.contain("holds at least what it owes");
  expect(await page.getByTestId("safe-owners").textContent()).to.match(/^2 of 3 owners must sign/);
}

async function provideCommand(page: Page, url: string, net: Net & { runDir: string }, name: string, common: string[]) {
  await page.goto(`${url}?page=provide`);
  await page.getByLabel("Name").fill(name);
  // The cheapest offer on this network: the job posted below goes to it.
  await page.getByLabel("Price per step (USDC)").fill("0.0001");
  await page.getByRole("button", { name: "Copy command" }).click();
  await page.getByText("Waiting for your device…").waitFor();
  const command = (await page.getByTestId("provide-command").textContent())!;
  expect(command).to.contain(`--rpc ${net.rpc}`);
  // Run it exactly as shown: the VAR=value words in front are its environment (the run's store), and `npx gpuchain`
  // is this repository's cli/gpuchain.ts.
  const words = command.split(" ");
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0])) {
    const [k, ...v] = words.shift()!.split("=");
    env[k] = v.join("=");
  }
  expect(Object.keys(env), "the embedded store's endpoint and key pair").to.include.members([
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
  ]);
  // `npx --prefix THIS_INSTALLATION gpuchain`: this repository's cli/gpuchain.ts, from any folder.
  expect(words.slice(0, 4)).to.deep.equal(["npx", "--prefix", path.resolve("."), "gpuchain"]);
  expect(words, "a local chain's command takes its own gas").to.include("--faucet");
  expect(await page.getByTestId("provide-stake").textContent()).to.match(/deposits 5\.000000 USDC of stake/);
  const child: ChildProcess = spawn(process.execPath, ["cli/gpuchain.ts", ...words.slice(4)], {
    stdio: "ignore",
    env: { ...process.env, ...env },
  });
  try {
    // No hand step: the command's --faucet gets the new key its gas on this local chain.
    const keyFile = path.join(".gpuchain", "providers", name, "key");
    for (let i = 0; i < 120 && !existsSync(keyFile); i++) await sleep(500);
    const address = loadKey(keyFile).address;
    await page.getByTestId("follow-registered").getByText(`Registered at block`).waitFor({ timeout: 120_000 });
    expect(await page.getByTestId("follow-registered").textContent()).to.contain(address);
    expect(await net.protocol.registry.isActive(address)).to.equal(true);
    await page.getByTestId(`provider-${name}`).waitFor();
    expect(await page.getByTestId(`provider-${name}`).textContent()).to.contain("0.0001");
    // A client posts a job; the page follows the new provider to its first accepted step and its earnings.
    const create = ["job", "create", "--template", "blobs-tiny", "--steps", "10", "--max-price", "0.0015"];
    const key = path.join(net.runDir, "keys", "client.key");
    const posted = await runToEnd(["cli/gpuchain.ts", ...create, ...common, "--key", key]);
    expect(posted.code, posted.output).to.equal(0);
    await page.getByText(/^First accepted step: 10 at block \d+$/).waitFor({ timeout: 240_000 });
    const earned = await net.protocol.escrow.earningsOf(2n, address);
    expect(earned).to.equal(1_000n); // 10 steps × 0.0001 USDC
    await page.getByTestId(`provider-${name}`).getByText("0.001000").first().waitFor({ timeout: 20_000 });
  } finally {
    child.kill("SIGTERM");
  }
}

async function chainUnreachable(page: Page, url: string, rpc: string) {
  const port = new URL(rpc).port;
  const isRpc = (u: URL) => u.port === port;
  await page.goto(`${url}?page=onchain`);
  await page.getByTestId("reserves-held").waitFor({ timeout: 20_000 });
  // The network keeps moving, so the value to keep is whichever the page showed last before the banner went up:
  // the page records every value it shows, and whether the banner was up at the time.
  const shown = await recordShown(page, "reserves-held", "Chain unreachable");
  const banner = page.getByRole("alert").filter({ hasText: "Chain unreachable" });
  for (const fault of ["429", "down"] as const) {
    await page.route(isRpc, (r) =>
      fault === "429" ? r.fulfill({ status: 429, body: "Too Many Requests" }) : r.abort("connectionrefused"),
    );
    await banner.waitFor({ timeout: 20_000 });
    if (fault === "429") expect(await banner.textContent()).to.contain("429");
    await sleep(3_000); // past the page's first retry, which fails too
    expect(unkept(await shown()), fault).to.deep.equal([]); // the last good value, not a zero or a blank
    await page.unroute(isRpc);
    await banner.waitFor({ state: "detached", timeout: 45_000 });
  }
  expect((await shown()).filter((s) => s.banner).length, "the banner went up").to.be.at.least(2);
}

type Shown = { text: string; banner: boolean };

/** From now on, records in the page each text `testId` shows and whether an alert naming `alert` was up then. */
async function recordShown(page: Page, testId: string, alert: string): Promise<() => Promise<Shown[]>> {
  // A script, not a function: this project's Node types have no DOM.
  await page.evaluate(`(() => {
    const seen = (window.shown = []);
    const note = () => {
      const text = document.querySelector('[data-testid=${JSON.stringify(testId)}]')?.textContent ?? "";
      const alerts = Array.from(document.querySelectorAll('[role="alert"]'));
      const banner = alerts.some((a) => a.textContent.includes(${JSON.stringify(alert)}));
      const last = seen.at(-1);
      if (!last || last.text !== text || last.banner !== banner) seen.push({ text, banner });
    };
    note();
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
  return () => page.evaluate("window.shown") as Promise<Shown[]>;
}

/** Each value shown while the banner was up that is not the one shown just before it went up. */
function unkept(shown: Shown[]): string[] {
  const out: string[] = [];
  let good: string | undefined;
  for (const s of shown) {
    if (!s.banner) good = s.text;
    else if (s.text !== good) out.push(`${JSON.stringify(s.text)} while unreachable, after ${JSON.stringify(good)}`);
  }
  return out;
}

async function coordinatorKilled(context: BrowserContext, net: Net, common: string[]) {
  const port = await freePort(0);
  const coordinator = spawn(
    process.execPath,
    ["cli/gpuchain.ts", "keeper", "coordinator", "--dry-run", "--port", String(port), ...common],
    { stdio: "ignore" },
  );
  const dead = `http://127.0.0.1:${await freePort(0)}`;
  const server = await startDashboardServer({
    rpc: net.rpc,
    deploymentFile: net.deploymentFile,
    coordinatorUrl: `http://127.0.0.1:${port}`,
    collectorUrl: dead,
  });
  const page = await context.newPage();
  try {
    await page.goto(server.url);
    await page.getByText("coordinator online").waitFor({ timeout: 60_000 });
    coordinator.kill("SIGKILL");
    const banner = page.getByRole("alert").filter({ hasText: "Coordinator offline" });
    await banner.waitFor({ timeout: 30_000 });
    await banner.getByRole("button", { name: "Switch to the recorded run" }).click();
    await page.locator(".page-head .badge-recorded").waitFor();
    expect(new URL(page.url()).searchParams.get("run")).to.match(/\.jsonl$/);
    await page.getByRole("region", { name: "Recorded run playback" }).waitFor();
  } finally {
    coordinator.kill("SIGKILL");
    await page.close();
    await server.close();
  }
}

async function accessibility(page: Page, url: string) {
  const found: string[] = [];
  for (const id of PAGE_IDS) {
    await page.goto(`${url}?page=${id}`);
    await page.locator("h1").waitFor();
    await page.waitForTimeout(800);
    for (const v of await seriousViolations(page)) found.push(`${id}: ${v}`);
  }
  expect(found).to.deep.equal([]);
}
