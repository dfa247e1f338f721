/**
 * Builds the dashboard (vite build) when dashboard/dist is missing or older than its sources, so a fresh clone
 * needs no extra step: `gpuchain dashboard`, `npm start` and the tests call `ensureBuilt()` first.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DIST_DIR = path.join(DASHBOARD_DIR, "dist");
const ROOT = path.resolve(DASHBOARD_DIR, "..");
const SOURCES = [
  path.join(DASHBOARD_DIR, "src"),
  path.join(DASHBOARD_DIR, "index.html"),
  path.join(DASHBOARD_DIR, "vite.config.ts"),
  path.join(ROOT, "sdk"), // the page imports its shared facts from sdk/ (sentences, formats, ledger, …)
  path.join(ROOT, "artifacts", "contracts", "JobEscrow.sol", "JobEscrow.json"),
  path.join(ROOT, "artifacts", "contracts", "ProviderRegistry.sol", "ProviderRegistry.json"),
];

function newest(p: string): number {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = st.mtimeMs;
  for (const e of readdirSync(p)) m = Math.max(m, newest(path.join(p, e)));
  return m;
}

/** True when dist/ is missing or older than any source (pure apart from reading mtimes). */
export function needsBuild(): boolean {
  const built = path.join(DIST_DIR, "index.html");
  if (!existsSync(built)) return true;
  const builtAt = statSync(built).mtimeMs;
  return SOURCES.some((s) => newest(s) > builtAt);
}

export async function ensureBuilt(note: (line: string) => void = () => {}): Promise<void> {
  if (!needsBuild()) return;
  note("building the dashboard (vite build) …");
  const vite = path.join(path.dirname(createRequire(import.meta.url).resolve("vite/package.json")), "bin", "vite.js");
  const started = Date.now();
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [vite, "build", DASHBOARD_DIR], {
      cwd: ROOT,
      // What users get, whoever builds it: under `hardhat test` NODE_ENV is "test", and Vite then bundles React's
      // development build (257 kB gzipped instead of 194).
      env: { ...process.env, NODE_ENV: "production" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (c) => resolve({ code: c ?? 1, output }));
  });
  if (code !== 0) throw new Error(`the dashboard build failed:\n${output.trim()}`);
  note(`built the dashboard in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
