/**
 * Where the time of a real run goes, from its recording (demo/recording.ts): every child's decision lines with
 * their own timestamps (`t`, the writer's clock; all on this machine). Pure functions of the entries.
 *
 * One checkpoint's latency, by phase (medians over the run's accepted checkpoints):
 *   store          the agent's background put of the checkpoint's blobs ("checkpoint stored" storeMs)
 *   report         reportable (stored, and the previous one noticed accepted) → report mined ("checkpoint reported")
 *   verify         report mined → the quorum's verifier decided ("checkpoint decided", the threshold-th one)
 *   sign           that decision → its signature at the collector ("signature", threshold reached)
 *   relay          threshold reached → the collector sends ("decision")
 *   mine           sending → acceptCheckpoint mined ("sent")
 *   agent_notices  mined → the agent noticed ("checkpoint accepted")
 *   total          report mined → noticed
 */
import { readFileSync } from "node:fs";

export interface LogLine {
  source: string;
  t: number;
  r: Record<string, unknown>;
}

/** The log entries of a recording, with their writers' timestamps (ms since the epoch). */
export function recordedLogs(file: string): LogLine[] {
  const out: LogLine[] = [];
  for (const text of readFileSync(file, "utf8").split("\n")) {
    if (!text.trim()) continue;
    const e = JSON.parse(text) as { kind: string; source: string; data: unknown };
    const r = e.data as Record<string, unknown> | string;
    if (e.kind !== "log" || typeof r !== "object" || r === null || typeof r.t !== "string") continue;
    out.push({ source: e.source, t: Date.parse(r.t), r });
  }
  return out;
}

const is = (l: LogLine, component: string, msg: string) => l.r.component === component && l.r.msg === msg;
const sameCheckpoint = (l: LogLine, step: unknown, epoch: unknown) =>
  Number(l.r.step) === Number(step) && String(l.r.epoch) === String(epoch);

export function median(xs: number[]): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export type Phases = Record<
  "store" | "report" | "verify" | "sign" | "relay" | "mine" | "agent_notices" | "total",
  number
>;

/** Each accepted checkpoint's phases (ms), in step order. */
export function checkpointPhases(logs: LogLine[]): (Phases & { step: number; verifyCpuMs: number })[] {
  const out: (Phases & { step: number; verifyCpuMs: number })[] = [];
  let prevNoticed = Number.NEGATIVE_INFINITY;
  for (const rep of logs.filter((l) => is(l, "agent", "checkpoint reported"))) {
    const { step, epoch } = rep.r;
    const here = (l: LogLine) => sameCheckpoint(l, step, epoch);
    const stored = logs.find((l) => l.source === rep.source && is(l, "agent", "checkpoint stored") && here(l));
    const noticed = logs.find((l) => l.source === rep.source && is(l, "agent", "checkpoint accepted") && here(l));
    const sig = logs.find(
      (l) => is(l, "collector", "signature") && here(l) && l.r.action === "accept" && l.r.signatures === l.r.threshold,
    );
    const decision = logs.find((l) => is(l, "collector", "decision") && here(l) && l.r.action === "accept");
    const sent = logs.find((l) => is(l, "collector", "sent") && here(l) && l.r.method === "acceptCheckpoint");
    const decided = logs.filter((l) => is(l, "verifier", "checkpoint decided") && here(l) && l.r.action === "accept");
    if (!stored || !noticed || !sig || !decision || !sent || decided.length < Number(sig.r.threshold)) continue;
    const quorum = decided.map((d) => d.t).sort((a, b) => a - b)[Number(sig.r.threshold) - 1];
    const reportable = Math.max(stored.t, prevNoticed);
    prevNoticed = noticed.t;
    out.push({
      step: Number(step),
      store: Number(stored.r.storeMs),
      report: rep.t - reportable,
      verify: quorum - rep.t,
      sign: sig.t - quorum,
      relay: decision.t - sig.t,
      mine: sent.t - decision.t,
      agent_notices: noticed.t - sent.t,
      total: noticed.t - rep.t,
      verifyCpuMs: median(decided.map((d) => Number(d.r.cpuMs))),
    });
  }
  return out;
}

/** `checkpoint_latency_ms_<phase>`: medians over the run's accepted checkpoints. */
export function checkpointLatency(logs: LogLine[]): Record<string, number> {
  const all = checkpointPhases(logs);
  const out: Record<string, number> = { checkpoint_latency_checkpoints: all.length };
  for (const k of ["store", "report", "verify", "sign", "relay", "mine", "agent_notices", "total"] as const) {
    out[`checkpoint_latency_ms_${k}`] = Math.round(median(all.map((p) => p[k])));
  }
  out.checkpoint_verify_cpu_ms = Math.round(median(all.map((p) => p.verifyCpuMs)));
  return out;
}

/** The agents' own "training record" lines (one per job and epoch each worked to its end). */
export function trainingRecords(logs: LogLine[]): Record<string, unknown>[] {
  return logs.filter((l) => is(l, "agent", "training record")).map((l) => ({ source: l.source, ...l.r }));
}

/**
 * The failover's parts, from the SIGKILL (`killedAt`, ms since the epoch) to the replacement's first accepted
 * checkpoint: detect (the coordinator decides to unassign), unassign mined, assign mined (the next tick),
 * notice (the replacement starts working), load (template and first state: up to its first segment's start),
 * first segment (training), store, report (mined; it may wait for the dead provider's own pending checkpoint to be
 * decided first), verify (→ acceptCheckpoint mined). Seconds.
 */
export function failoverParts(logs: LogLine[], killedAt: number): Record<string, number> | undefined {
  const after = logs.filter((l) => l.t >= killedAt);
  const decide = after.find((l) => is(l, "coordinator", "decision") && l.r.action === "unassign");
  const unassigned = after.find((l) => is(l, "coordinator", "sent") && l.r.method === "unassign");
  const assigned = after.find((l) => is(l, "coordinator", "sent") && l.r.method === "assign");
  if (!decide || !unassigned || !assigned) return undefined;
  const epoch = Number(assigned.r.epoch) + 1;
  const mine = (l: LogLine) => Number(l.r.epoch) === epoch;
  const working = after.find((l) => is(l, "agent", "working job") && mine(l));
  if (!working) return undefined;
  const own = after.filter((l) => l.source === working.source && mine(l));
  const reported = own.find((l) => is(l, "agent", "checkpoint reported"));
  const stored = own.find((l) => is(l, "agent", "checkpoint stored") && l.r.step === reported?.r.step);
  const sent =
    reported &&
    after.find(
      (l) =>
        is(l, "collector", "sent") && l.r.method === "acceptCheckpoint" && sameCheckpoint(l, reported.r.step, epoch),
    );
  if (!reported || !stored || !sent) return undefined;
  const trainedMs = Number(stored.r.trainedMs);
  const storeMs = Number(stored.r.storeMs);
  const segmentStart = stored.t - storeMs - trainedMs;
  const s = (ms: number) => Math.round(ms) / 1000;
  return {
    failover_detect_seconds: s(decide.t - killedAt),
    failover_part_unassign_mined_seconds: s(unassigned.t - decide.t),
    failover_part_assign_mined_seconds: s(assigned.t - unassigned.t),
    failover_part_replacement_notices_seconds: s(working.t - assigned.t),
    failover_part_load_seconds: s(segmentStart - working.t),
    failover_part_first_segment_seconds: s(trainedMs),
    failover_part_first_segment_steps: Number(stored.r.step) - Number(stored.r.startStep),
    failover_part_store_seconds: s(storeMs),
    failover_part_report_seconds: s(reported.t - stored.t),
    failover_part_verify_seconds: s(sent.t - reported.t),
    failover_parts_total_seconds: s(sent.t - killedAt),
  };
}
