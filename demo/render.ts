/**
 * Turns the children's structured log lines into the short live view `npm start` prints. Progress lines are
 * thinned out (one per process every 2 s); decisions, warnings and errors are always shown.
 */
import { describeEvent, jobTemplates, nameFrom, type EventLike, type MetricWords } from "../sdk/words/sentences.ts";
import { loadTemplate } from "../workloads/index.ts";
import { metricText } from "../workloads/metric.ts";

/** A decoded chain event as the run records and narrates it. */
export interface LiveEvent extends EventLike {
  args: Record<string, unknown>;
  blockNumber: number;
}

/** Jobs' templates seen in this run's JobCreated events: what a verdict's metric means (workloads/metric.ts). */
const templates = new Map<string, string>();
const metricWords: MetricWords = (jobId, metric) => {
  const id = templates.get(String(jobId));
  try {
    return id === undefined ? undefined : metricText(loadTemplate(id).descriptor, metric);
  } catch {
    return undefined; // a template this software does not know: the bare number
  }
};

/** The live line for one chain event (sdk/words/sentences.ts); an address without a name shows its first 10 characters. */
export function chainLine(e: LiveEvent, names: Record<string, string>): string {
  for (const [job, template] of jobTemplates([e])) templates.set(job, template);
  return `[chain] ${describeEvent(
    e,
    nameFrom(names, (a) => a.slice(0, 10)),
    undefined,
    metricWords,
  )}`;
}

const lastShown = new Map<string, number>();
const trained = new Map<string, number>();
const THROTTLE_MS = 2_000;

/** The highest step a provider said it trained (for the work-lost figure). */
export function lastTrainedStep(name: string): number | undefined {
  return trained.get(name);
}

export function renderChildLine(name: string, line: string, stream: "stdout" | "stderr"): string | undefined {
  if (name === "chain") return undefined; // the node's own RPC log is noise here; chain events are shown instead
  const record = parse(line);
  if (!record) {
    const text = line.trim();
    if (!text || stream === "stdout") return text ? `[${name}] ${text}` : undefined;
    return /error|warn|fail/i.test(text) ? `[${name}] ${text}` : undefined;
  }
  if (typeof record.step === "number") trained.set(name, Math.max(record.step, trained.get(name) ?? 0));
  const level = String(record.level ?? "info");
  if (level === "debug") return undefined; // e.g. the agents' per-step record (--step-log): counted, not shown
  const msg = String(record.msg ?? "");
  const important =
    level === "warn" ||
    level === "error" ||
    /fault|fenced|refus|decided|decision|assign|regist|verdict|settle|dispute|kill|stopped|started|failed/i.test(msg);
  if (!important && /^(tick|reserves|signature)$/.test(msg)) return undefined; // routine, every block or tick
  const key = `${prefixOf(name, record)}:${important ? msg : "progress"}`;
  const now = Date.now();
  if (!important || /progress|training|heartbeat/i.test(msg)) {
    if (now - (lastShown.get(key) ?? 0) < THROTTLE_MS) return undefined;
  }
  lastShown.set(key, now);
  return `[${prefixOf(name, record)}] ${level === "info" ? "" : level.toUpperCase() + " "}${msg}${fields(record)}`;
}

/** `keeper all` runs four keepers in one process: each line is prefixed with the keeper that wrote it. */
function prefixOf(name: string, record: Record<string, unknown>): string {
  if (name !== "keepers") return name;
  if (typeof record.component === "string" && record.component !== "keeper") return record.component;
  return typeof record.keeper === "string" ? record.keeper : name;
}

const SHOWN_FIELDS = [
  "job",
  "jobId",
  "epoch",
  "step",
  "loss",
  "stepsPerSecond",
  "action",
  "reason",
  "reasons",
  "accuracy",
  "fault",
];

function fields(r: Record<string, unknown>): string {
  const parts = SHOWN_FIELDS.filter((k) => r[k] !== undefined).map((k) => `${k}=${format(r[k])}`);
  return parts.length ? `  ${parts.join(" ")}` : "";
}

function format(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(4);
  if (Array.isArray(v)) return v.join("; ");
  return String(v);
}

function parse(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
