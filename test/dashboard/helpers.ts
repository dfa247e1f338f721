/** What the dashboard tests share: a served dashboard, axe checks, screenshots, waiting on the page. */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { freePort } from "../../demo/chain.ts";
import { launch } from "./browser.ts";
import { PAGES } from "../../dashboard/src/pageList.ts";

export const SHOTS = path.join("test-results", "dashboard");
/** Every page's id, from the dashboard's own list (dashboard/src/pageList.ts), not a copy of it. */
export const PAGE_IDS = PAGES.map((p) => p.id);

/** Serious or critical axe violations on the page, as "rule: target" lines. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .flatMap((v) => v.nodes.slice(0, 3).map((n) => `${v.id} (${v.impact}): ${n.target.join(" ")} — ${v.help}`));
}

export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

/** A deployment file naming contracts on a chain that is not running: a recording needs no chain. */
export function offlineDeployment(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const a = (n: number) => "0x" + n.toString(16).padStart(40, "0");
  const file = path.join(dir, "deployed_addresses.json");
  const keys = [
    "JobEscrow",
    "ProviderRegistry",
    "TestUSDC",
    "VerifierSafeProxy",
    "SafeL2",
    "SafeProxyFactory",
    "CompatibilityFallbackHandler",
    "MultiSend",
    "MultiSendCallOnly",
    "SignMessageLib",
    "CreateCall",
    "SimulateTxAccessor",
  ];
  writeFileSync(file, JSON.stringify(Object.fromEntries(keys.map((k, i) => [`GPUChain#${k}`, a(i + 1)]))));
  return file;
}

/** USDC text "0.900000 USDC" or "0.9" → base units. */
export function units(text: string): bigint {
  const m = /(-?\d+)(?:\.(\d{1,6}))?/.exec(text);
  if (!m) throw new Error(`no USDC amount in "${text}"`);
  return BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0"));
}

/**
 * A dashboard server watching `rpc` (default: a port where nothing listens), its coordinator and collector URLs
 * where nothing listens, and a Chromium page at desktop width (1280 × 900).
 */
export async function servedDashboard(o: {
  deploymentFile: string;
  rpc?: string;
}): Promise<{ server: DashboardServer; browser: Browser; page: Page }> {
  const dead = `http://127.0.0.1:${await freePort(0)}`;
  const server = await startDashboardServer({
    rpc: o.rpc ?? dead,
    deploymentFile: o.deploymentFile,
    coordinatorUrl: dead,
    collectorUrl: dead,
  });
  const browser = await launch();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  return { server, browser, page };
}
