/**
 * `npm run prove-profile`: does this machine compute the reference bits? Trains each approved template from the
 * reference seed on the execution provider the agent would choose (or --device), compares its state hashes with the
 * table docs/WORKLOADS.md commits, and says for which templates this machine's arithmetic profile gives them: the
 * evidence a GPU profile needs before it joins workloads/profile.ts PROVEN_PROFILES. See USAGE.
 * Exits 0 when every template tried gives the reference bits, 1 when one does not (or its provider fails to open),
 * 2 on a usage error. Imports only workloads/ and agent/device.ts: it runs from a bare copy of the repository with
 * onnxruntime-node and the data sets (no chain, no ethers).
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { detectDevice } from "../agent/device.ts";
import { isDeviceChoice, type DeviceChoice } from "../agent/executionProvider.ts";
// Not workloads/index.ts: it also loads the S3 store's SDK, which a bare GPU machine's copy need not carry.
import { localProfile, PROVEN_PROFILES } from "../workloads/profile.ts";
import type { ExecutionProvider } from "../workloads/runtime.ts";
import { listTemplates, loadTemplate } from "../workloads/templates.ts";
import { parseReferenceTable, referenceRun } from "../workloads/referenceHashes.ts";
import { opRounding } from "./opRounding.ts";

export const USAGE = `usage: npm run prove-profile [-- options]

  Trains every approved template 20 steps from the reference seed on this machine and compares the state hashes
  with the table in docs/WORKLOADS.md. Prints the machine's arithmetic profile, where onnxruntime placed the
  gradient graph's nodes, each hash as it comes, and a summary of plain "name: value" lines.

  --device auto|cpu|webgpu|cuda   the execution provider (default auto: the one gpuchain provide would choose)
  --templates NAME,…              only these templates (default: all)
  --table FILE                    the reference table (default docs/WORKLOADS.md)
  --json FILE                     also write the report as JSON
  --ops                           instead: which float ops this provider rounds differently from the CPU's`;

export type TemplateProof = {
  template: string;
  /** Steps whose hash was compared, and the first that differed (undefined: all equal). */
  compared: number;
  firstMismatch?: { step: number; got: string; want: string };
  /** Median time of a step, ms (session creation excluded). */
  stepMs: number;
  /** The gradient graph's nodes per onnxruntime execution provider, e.g. { WebGpuExecutionProvider: 180 }. */
  placements: Record<string, number>;
  /** Why the run could not finish (a provider that fails to open, a crash): no evidence either way. */
  error?: string;
};

/** Nodes per execution provider, from onnxruntime's verbose session log ("… placed on [EP]. Number of nodes: N"). */
export function parsePlacements(log: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of log.matchAll(/placed on \[(\w+)\]\. Number of nodes: (\d+)/g)) out[m[1]] = (out[m[1]] ?? 0) + +m[2];
  return out;
}

/** Whether the run gave the reference bits: every hash compared, none different, and at least one compared. */
export const isProven = (p: TemplateProof): boolean => !p.error && !p.firstMismatch && p.compared > 0;

/** The summary lines (`name: value`, comparable run to run). */
export function summaryLines(profile: string, proofs: readonly TemplateProof[]): string[] {
  const lines = [`profile: ${profile}`];
  for (const p of proofs) {
    lines.push(`reference_bits_${p.template}: ${isProven(p) ? "yes" : p.error ? "error" : "no"}`);
    if (!p.error) lines.push(`step_ms_${p.template}: ${p.stepMs.toFixed(1)}`);
  }
  return lines;
}

/** What to do with the result, in one line (`listed`: the templates PROVEN_PROFILES already lists it for). */
export function verdict(profile: string, proofs: readonly TemplateProof[], listed: readonly string[] = []): string {
  const proven = proofs.filter(isProven).map((p) => p.template);
  const failed = proofs.filter((p) => !isProven(p)).map((p) => p.template);
  const lost = failed.filter((t) => listed.includes(t));
  if (lost.length)
    return (
      `${lost.join(", ")}: ${profile} is in PROVEN_PROFILES but did not give the reference bits here ` +
      `(a changed driver, onnxruntime or table?): its replay mismatches would be wrongly taken as evidence`
    );
  if (failed.length === 0) {
    const add = proven.filter((t) => !listed.includes(t));
    return add.length
      ? `every template gives the reference bits: ${profile} may join PROVEN_PROFILES (workloads/profile.ts) for ${add.join(", ")}`
      : `every template gives the reference bits: ${profile} is already in PROVEN_PROFILES for ${proven.join(", ")}`;
  }
  return (
    `${failed.join(", ")}: not the reference bits on ${profile}; keep it out of PROVEN_PROFILES for ` +
    `${failed.length === 1 ? "it" : "them"} (its providers stay behind the safety net). --ops shows which ops round differently`
  );
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN;
};

/**
 * Where onnxruntime puts the template's gradient graph, read from its verbose log in a child process (the native
 * log goes to the process's stderr, which this process cannot read back).
 */
async function gradientPlacements(template: string, provider: ExecutionProvider): Promise<Record<string, number>> {
  const url = (file: string) => JSON.stringify(new URL(`../workloads/${file}`, import.meta.url).href);
  const code = `
    import { buildTemplate, DESCRIPTORS } from ${url("templates.ts")};
    import { ort, sessionOptions } from ${url("runtime.ts")};
    const t = buildTemplate(DESCRIPTORS.find((d) => d.name === ${JSON.stringify(template)})); // this one only
    const s = await ort.InferenceSession.create(t.graphs.gradient,
      { ...sessionOptions(${JSON.stringify(provider)}), logSeverityLevel: 0, logVerbosityLevel: 0 });
    await s.release();`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr.on("data", (d: Buffer) => (log += d.toString()));
  await new Promise((resolve) => child.on("close", resolve));
  return parsePlacements(log);
}

async function proveTemplate(
  name: string,
  want: readonly { step: number; hash: string }[],
  provider: ExecutionProvider,
  print: (line: string) => void,
): Promise<TemplateProof> {
  const t = loadTemplate(name);
  const proof: TemplateProof = { template: name, compared: 0, stepMs: NaN, placements: {} };
  proof.placements = await gradientPlacements(name, provider);
  const total = Object.values(proof.placements).reduce((a, b) => a + b, 0);
  print(
    `${name}: gradient graph's ${total} nodes on ` +
      (Object.entries(proof.placements)
        .map(([ep, n]) => `${ep} ${n}`)
        .join(", ") || "(no placement logged)"),
  );
  const steps = Math.max(...want.map((w) => w.step));
  const every = want[0].step; // the table's rows: every `every` steps
  const times: number[] = [];
  try {
    for await (const p of referenceRun(t, steps, every, { executionProvider: provider })) {
      times.push(p.stepMs);
      const w = want.find((x) => x.step === p.step);
      if (!w) continue;
      proof.compared++;
      const same = w.hash === p.hash;
      print(`${name}: step ${p.step}/${steps} ${p.hash.slice(0, 10)}… ${same ? "equal" : `DIFFERS (want ${w.hash})`}`);
      if (!same) {
        proof.firstMismatch = { step: p.step, got: p.hash, want: w.hash };
        break; // a state that differs once differs after
      }
    }
  } catch (err) {
    proof.error = (err as Error).message.split("\n")[0];
    print(`${name}: could not run on ${provider}: ${proof.error}`);
  }
  proof.stepMs = median(times);
  return proof;
}

type Report = { device: string; provider: ExecutionProvider; reason: string; profile: string; proofs: TemplateProof[] };

export async function proveProfile(argv: string[], print: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      device: { type: "string", default: "auto" },
      templates: { type: "string" },
      table: { type: "string", default: "docs/WORKLOADS.md" },
      json: { type: "string" },
      ops: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    print(USAGE);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}": it takes only options`);
  const choice = values.device!;
  if (!isDeviceChoice(choice)) throw new UsageError(`--device must be auto, cpu, webgpu or cuda, got "${choice}"`);
  if (!existsSync(values.table!)) throw new UsageError(`--table ${values.table}: no such file`);
  const table = parseReferenceTable(readFileSync(values.table!, "utf8"));
  const names = listTemplates().map((t) => t.descriptor.name);
  const chosen = values.templates?.split(",").filter(Boolean) ?? names;
  const unknown = chosen.find((n) => !names.includes(n));
  if (unknown) throw new UsageError(`--templates: ${unknown} is not an approved template (${names.join(", ")})`);
  const unlisted = chosen.find((n) => !table[n]?.length);
  if (unlisted) throw new UsageError(`--table ${values.table} has no reference hashes for ${unlisted}`);

  const device = detectDevice({ device: choice as DeviceChoice, askedBy: `--device ${choice}` });
  const provider = device.executionProvider;
  const profile = localProfile(provider, device.providerDevice);
  print(`device: ${device.kind} ${device.model} (${device.realMemoryMiB} MiB)`);
  print(`provider: ${device.providerReason}`);
  print(`profile: ${profile}`);
  if (values.ops) {
    const ops = await opRounding(provider, print);
    if (values.json) writeFileSync(values.json, JSON.stringify({ device: device.model, profile, ops }, null, 2) + "\n");
    return 0;
  }
  const proofs: TemplateProof[] = [];
  for (const name of chosen) proofs.push(await proveTemplate(name, table[name], provider, print));
  for (const line of summaryLines(profile, proofs)) print(line);
  print(
    verdict(
      profile,
      proofs,
      chosen.filter((name) => PROVEN_PROFILES[name]?.includes(profile)),
    ),
  );
  const report: Report = { device: device.model, provider, reason: device.providerReason ?? "", profile, proofs };
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2) + "\n");
  return proofs.every(isProven) ? 0 : 1;
}

class UsageError extends Error {}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    process.exitCode = await proveProfile(process.argv.slice(2), (l) => console.log(l));
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(`prove-profile: ${(err as Error).message}`);
    process.exitCode = usage ? 2 : 1;
  }
}
