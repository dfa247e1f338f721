/**
 * Dashboard figures, in a real Chromium:
 * - dashboard_bundle_gzip_kb: the built app's JS + CSS, gzipped (target ≤ 250);
 * - dashboard_first_render_ms: navigation → Status showing the job's accepted steps read from a real local
 *   network (the short `npm start` scenario, after settlement; target ≤ 1000);
 * - dashboard_longest_task_ms: the longest main-thread task (PerformanceObserver "longtask") while a recording of
 *   ≥ 1,000 chain events plays at 16× (target ≤ 100). The long recording is recordings/sample.jsonl tiled: each
 *   copy is a new job id, later blocks, and run time compressed 10×, so it plays in seconds;
 * - dashboard_longest_task_cpu_ms: the same playback's longest main-thread task in CPU time (Chromium's trace,
 *   `tdur`): what the page itself costs, without the time a loaded machine keeps the thread waiting.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { DIST_DIR, ensureBuilt } from "../dashboard/server/build.ts";
import { startDashboardServer } from "../dashboard/server/server.ts";
import { runScenario } from "../demo/scenario.ts";
import { launch } from "../dashboard/chromium.ts";

const TILES = 42;

export async function benchDashboard(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  await ensureBuilt(log);
  const out: Record<string, number> = {};
  const runDir = path.join(".gpuchain", `bench-dash-${process.pid}`);
  const deploymentId = `bench-${process.pid}-dashboard`;
  const lines: string[] = [];
  const browser = await launch();
  try {
    log("dashboard: short scenario on a local network for the first render …");
    await runScenario({
      template: "blobs-tiny",
      totalSteps: 40,
      checkpointInterval: 10,
      dispute: false,
      fault: "",
      kill: false,
      runDir,
      deploymentId,
      timeoutMs: 600_000,
      print: (l) => lines.push(l),
      beforeStop: async ({ rpc, deploymentFile }) => {
        const url = /dashboard: (http:\S+)/.exec(lines.join("\n"))![1];
        const page = await (await browser.newContext()).newPage();
        await page.goto(url); // warm: the first load also starts the server's own reads
        await page.getByTestId("accepted-steps").waitFor();
        const samples: number[] = [];
        for (let i = 0; i < 5; i++) {
          await page.goto(`${url}?job=1`);
          // Strings run in the page (this file is type-checked for Node, without the DOM's types).
          const rendered = `(() => { const el = document.querySelector('[data-testid="accepted-steps"]');
            return el && /^\\d+ of \\d+$/.test(el.textContent ?? "") ? performance.now() : null; })()`;
          samples.push(await page.waitForFunction(rendered).then((h) => h.jsonValue() as Promise<number>));
        }
        out.dashboard_first_render_ms = Math.round(median(samples));
        const playback = await longestTask(browser, rpc, deploymentFile, runDir, log);
        out.dashboard_longest_task_ms = playback.wallMs;
        out.dashboard_longest_task_cpu_ms = playback.cpuMs;
      },
    });
    out.dashboard_bundle_gzip_kb = bundleGzipKb(); // the build the pages above were served from
  } finally {
    await browser.close();
    rmSync(runDir, { recursive: true, force: true });
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  }
  return out;
}

export function bundleGzipKb(): number {
  const dir = path.join(DIST_DIR, "assets");
  let bytes = 0;
  for (const f of readdirSync(dir))
    if (/\.(js|css)$/.test(f)) bytes += gzipSync(readFileSync(path.join(dir, f)), { level: 9 }).length;
  bytes += gzipSync(readFileSync(path.join(DIST_DIR, "index.html"))).length;
  return Math.round(bytes / 102.4) / 10;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** recordings/sample.jsonl tiled TILES times: new job ids, later blocks, run time compressed 10×. */
export function longRecording(file: string): { entries: number; events: number } {
  const sample = readFileSync(path.join("recordings", "sample.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const span = sample.at(-1).ms + 1000;
  const out: string[] = [];
  let events = 0;
  for (let k = 0; k < TILES; k++) {
    for (const e of sample) {
      if (k > 0 && (e.kind === "badge" || e.kind === "summary")) continue;
      const copy = structuredClone(e);
      copy.ms = Math.round((copy.ms + k * span) / 10);
      const d = copy.data;
      if (copy.kind === "event") {
        if (k > 0 && d.args.jobId === undefined) continue; // deployment-time admin events happen once
        d.blockNumber += k * 40;
        if (d.args.jobId !== undefined) d.args.jobId = String(Number(d.args.jobId) + k);
        events++;
      } else if (d && typeof d === "object") {
        if (d.job !== undefined) d.job = String(Number(d.job) + k);
        if (d.block !== undefined) d.block += k * 40;
      }
      out.push(JSON.stringify(copy));
    }
  }
  writeFileSync(file, out.join("\n") + "\n");
  return { entries: out.length, events };
}

export async function longestTask(
  browser: Awaited<ReturnType<typeof launch>>,
  rpc: string,
  deploymentFile: string,
  dir: string,
  log: (l: string) => void,
): Promise<{ wallMs: number; cpuMs: number }> {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "bench-long.jsonl");
  const { entries, events } = longRecording(file);
  log(`dashboard: playing ${entries} entries (${events} chain events) at 16× …`);
  const server = await startDashboardServer({
    rpc,
    deploymentFile,
    coordinatorUrl: "http://127.0.0.1:9",
    collectorUrl: "http://127.0.0.1:9",
    extraRecordings: { "bench-long.jsonl": file },
  });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    if (process.env.DEBUG_LONGTASK) page.on("console", (m) => m.type() === "debug" && log(m.text()));
    await page.addInitScript(`
      window.__longest = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          window.__longest = Math.max(window.__longest, e.duration);
          console.debug("longtask at " + Math.round(e.startTime) + " ms: " + Math.round(e.duration) + " ms");
        }
      }).observe({ type: "longtask", buffered: true });`);
    await page.goto(`${server.url}?run=bench-long.jsonl&t=0`);
    await page.getByRole("button", { name: "Play" }).waitFor();
    await page.waitForFunction(`!/\\/ 0:00$/.test(document.querySelector(".pb-time")?.textContent ?? "/ 0:00")`);
    await page.waitForTimeout(500);
    // Loading is not playback: count from here.
    await page.evaluate(
      `window.__longest = 0; console.debug("playback starts at " + Math.round(performance.now()) + " ms")`,
    );
    await browser.startTracing(page, { categories: ["devtools.timeline", "toplevel"] });
    await page.evaluate(`console.timeStamp("playback")`); // tasks from here count (not the tracing's own start)
    await page.getByLabel("Playback speed").selectOption("16");
    await page.getByRole("button", { name: "Play" }).click();
    // Back to Play at the end. A cheap check, 4× a second: a role query walks the whole page's accessibility tree
    // (≈ 30 ms of the page's main thread each time), and it would be the longest task measured.
    const ended = `document.querySelector(".pb-controls button")?.textContent === "Play"`;
    await page.waitForFunction(ended, undefined, { timeout: 300_000, polling: 250 });
    const wallMs = Math.round((await page.evaluate("window.__longest")) as number);
    const trace = (await browser.stopTracing()).toString();
    return { wallMs, cpuMs: Math.round(longestTaskCpuMs(JSON.parse(trace))) };
  } finally {
    await server.close();
  }
}

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  tdur?: number;
  args?: { name?: string; data?: { message?: string } };
}

/** A main-thread task, as older and newer Chromiums name it. */
const TASK = new Set(["RunTask", "ThreadControllerImpl::RunTask"]);

/**
 * The longest task's CPU time (µs → ms) on the page's main thread (CrRendererMain) in a Chromium trace, from the
 * page's `console.timeStamp("playback")` on.
 */
export function longestTaskCpuMs(trace: { traceEvents: TraceEvent[] }): number {
  const events = trace.traceEvents;
  const main = new Set(
    events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`),
  );
  const from = events.find((e) => e.name === "TimeStamp" && e.args?.data?.message === "playback")?.ts;
  if (from === undefined) throw new Error("the trace has no playback time stamp");
  let longest = 0;
  for (const e of events)
    if (TASK.has(e.name) && e.ph === "X" && e.ts > from && main.has(`${e.pid}:${e.tid}`))
      longest = Math.max(longest, e.tdur ?? 0);
  return longest / 1000;
}

// `node bench/dashboard.ts`: these figures alone, as `name: value` lines (progress on stderr).
if (import.meta.url === `file://${path.resolve(process.argv[1] ?? "")}`) {
  for (const [k, v] of Object.entries(await benchDashboard((l) => process.stderr.write(`[bench] ${l}\n`))))
    console.log(`${k}: ${v}`);
  process.exit(0);
}
