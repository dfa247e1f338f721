/**
 * What the dashboard knows, folded entry by entry from a live stream or a recording (the same code for both).
 * Pure and synchronous: `applyEntry` mutates one `RunState`; playback rebuilds from scratch to seek backwards.
 */
import { unassignReason, type UnassignReasonText } from "../../../sdk/rules/job.ts";
import { verifierNames } from "../../../sdk/words/narrative.ts";
import { deviceKindName } from "../../../sdk/words/sentences.ts";
import { priceUnits } from "../../../sdk/words/format.ts";
import { namesIn, rolledBack, type ChainEvent, type Entry, type ReorgNote } from "../../../sdk/run/recording.ts";
import { earnedTotal } from "../../../sdk/rules/ledger.ts";
import { foldNew, newLedgerFold, type LedgerFold } from "../ledger.ts";

export interface ProviderView {
  key: string; // lower-case address
  address: string;
  name: string;
  pricePerStep?: string;
  kind?: "CPU" | "GPU";
  deviceModel?: string;
  memoryMiB?: number;
  registeredBlock?: number;
  registeredMs?: number;
  /** What the agent said about itself (recordings) or the registry says (live). */
  badges: Set<string>;
  /**
   * Whether its signed heartbeats name another machine than the dashboard server's (sdk/run/machine.ts, compared by the
   * server: a "machine" line); undefined while nobody said.
   */
  separateMachine?: boolean;
  fault?: string;
  lastSeenMs?: number;
  accepted: number;
  refused: number;
  /** What it earned, slashes and upheld disputes netted (sdk/rules/ledger.ts earnedTotal); null: the books are partial. */
  earned: bigint | null;
  earnings: { ms: number; step: number; total: number }[];
  refusals: { job: string; step: number; reasons: string[] }[];
  firstAssignedMs?: number;
  firstAcceptedMs?: number;
  /** Its own last problem, signed in its heartbeat (agent/problems.ts); null once cleared. */
  problem?: { text: string; ms: number } | null;
  /** Each time the coordinator took a job away, with the coordinator's own reason (its GET /unassignments). */
  takenAway: { job: string; epoch: string; reason: string }[];
}

export interface CheckpointView {
  job: string;
  epoch: string;
  step: number;
  provider: string;
  hash: string;
  reportedMs: number;
  reportedBlock: number;
  status: "pending" | "accepted" | "refused";
  decidedBlock?: number;
  /** verifier address (lower) → its decision, as far as the stream told it. */
  verifiers: Map<string, { action: string; reasons: string[]; accuracy: number | null }>;
  signers: Set<string>;
}

export interface Lane {
  job: string;
  provider: string;
  epoch: string;
  fromMs: number;
  toMs?: number;
  resumeStep: number;
  end?: UnassignReasonText["short"] | "verdict";
  endStep?: number;
}

export interface Marker {
  ms: number;
  kind: "fault" | "refusal" | "failover" | "verdict" | "settle" | "kill";
  label: string;
  job?: string;
  step?: number;
}

export interface ProcessView {
  name: string;
  role: "chain" | "keeper" | "verifier" | "provider" | "dashboard";
  lastSeenMs: number;
  /** It said it stopped, or the run killed it (SIGKILL): dead, not idle. Cleared when it is heard from again. */
  ended?: { ms: number; how: "stopped" | "killed" };
  /** What it was last doing, when its lines say: "job 1 step 116", "idle". */
  detail?: string;
}

export interface RunState {
  ms: number;
  entries: number;
  badges: string[];
  events: (ChainEvent & { ms: number })[];
  providers: Map<string, ProviderView>;
  names: Map<string, string>; // lower address → name (providers, verifiers)
  verifiers: Map<string, string>; // lower address → name
  checkpoints: Map<string, CheckpointView>;
  lanes: Lane[];
  markers: Marker[];
  loss: Map<string, { ms: number; step: number; loss: number; provider: string }[]>;
  accuracy: Map<string, { step: number; accuracy: number }[]>;
  /** Held-out loss of each accepted checkpoint (templates held to their loss), from the verifiers' decisions. */
  heldoutLoss: Map<string, { step: number; loss: number }[]>;
  /** A language template's greedy text from each accepted checkpoint (the verifiers' "checkpoint decided"). */
  samples: Map<string, { step: number; text: string }[]>;
  reserves: { ms: number; block: number; held: bigint; owes: bigint }[];
  processes: Map<string, ProcessView>;
  notes: { ms: number; text: string }[];
  summary?: string[];
  lastBlock: number;
  /** The verifier Safe's threshold and owner count, once the stream told them (live); recordings: 2 of 3. */
  safe: { threshold: number; owners: number };
  /** The escrow's books of `events` (sdk/rules/ledger.ts): where a provider's `earned` comes from. */
  books: LedgerFold;
}

export function emptyState(): RunState {
  return {
    ms: 0,
    entries: 0,
    badges: [],
    events: [],
    providers: new Map(),
    names: new Map(),
    verifiers: new Map(),
    checkpoints: new Map(),
    lanes: [],
    markers: [],
    loss: new Map(),
    accuracy: new Map(),
    heldoutLoss: new Map(),
    samples: new Map(),
    reserves: [],
    processes: new Map(),
    notes: [],
    lastBlock: 0,
    safe: { threshold: 2, owners: 3 },
    books: newLedgerFold(),
  };
}

const lower = (v: unknown) => String(v ?? "").toLowerCase();

export function applyEntry(s: RunState, e: Entry): void {
  s.ms = Math.max(s.ms, e.ms);
  s.entries += 1;
  switch (e.kind) {
    case "badge":
      for (const b of (e.data as string[]) ?? []) addBadge(s, b);
      return;
    case "event":
      return applyEvent(s, e.ms, e.data as ChainEvent);
    case "log":
      return applyLog(s, e.ms, e.source, e.data);
    case "metric":
      return applyMetric(s, e.ms, e.source, e.data);
    case "note":
      s.notes.push({ ms: e.ms, text: String(e.data) });
      if (/killed \w+ \(SIGKILL\)/.test(String(e.data))) {
        const who = /killed (\w+)/.exec(String(e.data))?.[1] ?? "a provider";
        s.markers.push({ ms: e.ms, kind: "kill", label: `${who} killed (SIGKILL)` });
        const p = s.processes.get(who);
        if (p) p.ended = { ms: e.ms, how: "killed" };
      }
      return;
    case "summary":
      s.summary = (e.data as string[]) ?? [];
      return;
  }
}

export function foldAll(entries: readonly Entry[], untilMs = Infinity): RunState {
  let s = emptyState();
  let kept: Entry[] = [];
  for (const e of entries) {
    if (e.ms > untilMs) break;
    if (e.kind === "metric" && e.source === "reorg") {
      // A reorganisation: what the replaced blocks said is gone; fold the rest again (folds are pure).
      kept = [...rolledBack(kept, Number((e.data as ReorgNote).from)), e];
      s = emptyState();
      for (const k of kept) applyEntry(s, k);
      continue;
    }
    kept.push(e);
    applyEntry(s, e);
  }
  return s;
}

/** "Capped profile (bob)" → "Capped profile"; run-level badges are kept once each. */
function addBadge(s: RunState, text: string) {
  const name = text.replace(/\s*\(.*\)$/, "");
  if (!s.badges.includes(name)) s.badges.push(name);
}

function provider(s: RunState, address: string, name?: string): ProviderView {
  const key = lower(address);
  let p = s.providers.get(key);
  if (!p) {
    p = {
      key,
      address,
      name: name ?? s.names.get(key) ?? address.slice(0, 10),
      badges: new Set(),
      accepted: 0,
      refused: 0,
      earned: 0n,
      earnings: [],
      refusals: [],
      takenAway: [],
    };
    s.providers.set(key, p);
  }
  if (name) {
    p.name = name;
    s.names.set(key, name);
  }
  return p;
}

function seen(s: RunState, name: string, role: ProcessView["role"], ms: number, detail?: string): ProcessView {
  let p = s.processes.get(name);
  if (p) p.lastSeenMs = Math.max(p.lastSeenMs, ms);
  else s.processes.set(name, (p = { name, role, lastSeenMs: ms }));
  p.ended = undefined; // heard from again: alive
  if (detail !== undefined) p.detail = detail;
  return p;
}

/** The lines a process writes as it exits (runner.ts, the agent, the verifier). */
const STOPPED = new Set(["stopped", "stopped cleanly", "verifier stopped"]);

function applyEvent(s: RunState, ms: number, ev: ChainEvent) {
  if (!ev || typeof ev.name !== "string") return;
  s.events.push({ ...ev, ms });
  s.lastBlock = Math.max(s.lastBlock, ev.blockNumber);
  seen(s, "chain", "chain", ms);
  const a = ev.args ?? {};
  const job = a.jobId === undefined ? undefined : String(a.jobId);
  switch (ev.name) {
    case "ProviderRegistered":
    case "ProviderUpdated": {
      const p = provider(s, String(a.provider), a.name ? String(a.name) : undefined);
      p.pricePerStep = String(a.pricePerStep);
      p.kind = deviceKindName(a.kind);
      p.deviceModel = String(a.deviceModel ?? "");
      p.memoryMiB = Number(a.memoryMiB);
      if (ev.name === "ProviderRegistered") {
        p.registeredBlock = ev.blockNumber;
        p.registeredMs = ms;
      }
      // A GPU the provider reported to the registry; CPU work is the synthetic stand-in.
      if (p.kind === "GPU") p.badges.add("Real GPU");
      else p.badges.add("Synthetic");
      separateMachineBadge(p);
      return;
    }
    case "ProviderAssigned": {
      const p = provider(s, String(a.provider));
      p.firstAssignedMs ??= ms;
      p.pricePerStep ??= String(a.pricePerStep);
      s.lanes.push({
        job: job!,
        provider: p.key,
        epoch: String(a.epoch),
        fromMs: ms,
        resumeStep: Number(a.resumeStep),
      });
      return;
    }
    case "ProviderUnassigned": {
      const reason = unassignReason(a.reason).short;
      const step = lastAccepted(s, job!);
      closeLane(s, job!, lower(a.provider), ms, reason, step);
      if (reason !== "refused") {
        s.markers.push({ ms, kind: "failover", label: `failover: ${nameOf(s, a.provider)} ${reason}`, job, step });
      }
      return;
    }
    case "CheckpointReported": {
      const key = `${job}:${a.epoch}:${a.step}`;
      s.checkpoints.set(key, {
        job: job!,
        epoch: String(a.epoch),
        step: Number(a.step),
        provider: lower(a.provider),
        hash: String(a.checkpointHash),
        reportedMs: ms,
        reportedBlock: ev.blockNumber,
        status: "pending",
        verifiers: s.checkpoints.get(key)?.verifiers ?? new Map(),
        signers: s.checkpoints.get(key)?.signers ?? new Set(),
      });
      return;
    }
    case "CheckpointAccepted": {
      const { p } = decided(s, job!, ev, "accepted");
      p.accepted += Number(a.stepsCredited ?? 0);
      refreshEarned(s);
      p.earnings.push({ ms, step: Number(a.step), total: Number(p.earned ?? 0n) / 1e6 });
      p.firstAcceptedMs ??= ms;
      return;
    }
    case "CheckpointRefused": {
      const { c, p } = decided(s, job!, ev, "refused");
      p.refused += 1;
      const reasons = [...c.verifiers.values()].flatMap((v) => v.reasons);
      p.refusals.push({ job: job!, step: Number(a.step), reasons: [...new Set(reasons)] });
      s.markers.push({ ms, kind: "refusal", label: `refused: ${p.name}'s step ${a.step}`, job, step: Number(a.step) });
      return;
    }
    case "VerdictSubmitted": {
      closeLane(s, job!, undefined, ms, "verdict", lastAccepted(s, job!));
      // the metric's words depend on the template (the Status page says them); the marker says the outcome
      s.markers.push({ ms, kind: "verdict", label: `verdict: ${a.passed ? "passed" : "failed"}`, job });
      return;
    }
    case "JobSettled":
      s.markers.push({ ms, kind: "settle", label: `job ${job} settled`, job });
      return;
    case "ProviderSlashed":
    case "DisputeResolved":
      refreshEarned(s); // a slash voids the provider's unclaimed earnings, an upheld dispute the job's payments
      return;
  }
}

/** Every provider's `earned` from the books of the events so far (the ledger's one rule, not a fold of our own). */
function refreshEarned(s: RunState) {
  foldNew(s.books, s.events);
  const ledger = s.books.ledger;
  for (const p of s.providers.values()) p.earned = ledger ? earnedTotal(ledger, p.address) : null;
}

function lastAccepted(s: RunState, job: string): number {
  let step = 0;
  for (const c of s.checkpoints.values()) if (c.job === job && c.status === "accepted") step = Math.max(step, c.step);
  return step;
}

function closeLane(s: RunState, job: string, who: string | undefined, ms: number, end: Lane["end"], step: number) {
  for (let i = s.lanes.length - 1; i >= 0; i--) {
    const l = s.lanes[i];
    if (l.job === job && l.toMs === undefined && (who === undefined || l.provider === who)) {
      l.toMs = ms;
      l.end = end;
      l.endStep = step;
      return;
    }
  }
}

/** The checkpoint an accept or refuse event decided (status and block set), and the provider it was for. */
function decided(s: RunState, job: string, ev: ChainEvent, status: "accepted" | "refused") {
  const a = ev.args ?? {};
  const c = checkpoint(s, job, String(a.epoch), Number(a.step), lower(a.provider));
  c.status = status;
  c.decidedBlock = ev.blockNumber;
  return { c, p: provider(s, String(a.provider)) };
}

function checkpoint(s: RunState, job: string, epoch: string, step: number, who: string): CheckpointView {
  const key = `${job}:${epoch}:${step}`;
  let c = s.checkpoints.get(key);
  if (!c) {
    c = {
      job,
      epoch,
      step,
      provider: who,
      hash: "",
      reportedMs: s.ms,
      reportedBlock: 0,
      status: "pending",
      verifiers: new Map(),
      signers: new Set(),
    };
    s.checkpoints.set(key, c);
  }
  return c;
}

export function nameOf(s: RunState, address: unknown): string {
  const key = lower(address);
  return s.names.get(key) ?? s.verifiers.get(key) ?? `${key.slice(0, 6)}…${key.slice(-4)}`;
}

type Log = Record<string, unknown>;

function applyLog(s: RunState, ms: number, source: string, raw: unknown) {
  if (!raw || typeof raw !== "object") return;
  const d = raw as Log;
  const component = String(d.component ?? "");
  const msg = String(d.msg ?? "");
  let proc: ProcessView | undefined;
  // "keeper" is the process that runs them all (`keeper all`): its own lines say nothing of one keeper.
  if (source === "keepers") proc = component === "keeper" ? undefined : seen(s, component || "keepers", "keeper", ms);
  else if (component === "verifier" || /^verifier/.test(source)) proc = seen(s, source, "verifier", ms);
  else if (component === "agent") proc = seen(s, source, "provider", ms, agentDetail(d, msg));
  if (proc && STOPPED.has(msg)) proc.ended = { ms, how: "stopped" };
  if (component === "verifier" && msg === "verifier started" && d.verifier) {
    s.verifiers.set(lower(d.verifier), source);
  }
  // The run's own names (its client, keepers' keys, verifiers by process): the recording's and live's alike.
  for (const [address, name] of Object.entries(namesIn(source, d)))
    if (!s.names.has(address)) s.names.set(address, name);
  if (component === "agent") applyAgentLog(s, ms, source, d, msg);
  // Why the coordinator took a job away: live from its GET /unassignments ("unassigned"), in npm start's recording
  // from its own decision line (logged as it sends); the chain itself says only "the coordinator".
  const unassigned = msg === "unassigned" || (msg === "decision" && d.action === "unassign");
  if (component === "coordinator" && unassigned && d.provider) {
    const p = provider(s, String(d.provider));
    const note = { job: String(d.job), epoch: String(d.epoch), reason: String(d.reason ?? "") };
    if (!p.takenAway.some((t) => t.job === note.job && t.epoch === note.epoch)) p.takenAway.push(note);
  }
  if (component === "verifier" && msg === "checkpoint decided") {
    const c = checkpoint(s, String(d.job), String(d.epoch), Number(d.step), "");
    const reasons = Array.isArray(d.reasons) ? d.reasons.map(String) : [];
    const accuracy = typeof d.accuracy === "number" ? d.accuracy : null;
    c.verifiers.set(lower(d.verifier), { action: String(d.action), reasons, accuracy });
    if (accuracy !== null && d.action === "accept") addAccuracy(s, String(d.job), Number(d.step), accuracy);
    if (typeof d.loss === "number" && d.action === "accept") addHeldoutLoss(s, String(d.job), Number(d.step), d.loss);
    if (typeof d.sample === "string" && d.action === "accept") addSample(s, String(d.job), Number(d.step), d.sample);
  }
  if (component === "collector" && (msg === "signature" || msg === "decision")) {
    const c = checkpoint(s, String(d.job), String(d.epoch), Number(d.step), "");
    if (d.signer) c.signers.add(lower(d.signer));
    if (Array.isArray(d.signers)) for (const x of d.signers) c.signers.add(lower(x));
    if (d.signer && !c.verifiers.has(lower(d.signer))) {
      c.verifiers.set(lower(d.signer), { action: String(d.action), reasons: [], accuracy: null });
    }
  }
}

function applyAgentLog(s: RunState, ms: number, source: string, d: Log, msg: string) {
  const byName = [...s.names.entries()].find(([, n]) => n === source)?.[0];
  const address = d.address ?? d.provider ?? (byName ? s.providers.get(byName)?.address : undefined);
  if (address) {
    const p = provider(s, String(address), source);
    p.lastSeenMs = ms;
    if (Array.isArray(d.badges)) for (const b of d.badges) if (b !== "Local chain") p.badges.add(String(b));
    if (d.fault) p.fault = String(d.fault);
    if (msg === "problem") p.problem = typeof d.problem === "string" ? { text: d.problem, ms } : null;
    if (msg === "provider agent") {
      p.kind = d.kind === "GPU" ? "GPU" : "CPU";
      p.deviceModel = String(d.device ?? p.deviceModel ?? "");
      p.memoryMiB = Number(d.memoryMiB ?? p.memoryMiB);
    }
    if (msg === "machine" && typeof d.separateMachine === "boolean") p.separateMachine = d.separateMachine;
    if (msg === "provider agent" || msg === "machine") separateMachineBadge(p);
    // The agent logs its price as formatPrice writes it ("0.000800 USDC/step"); one it cannot read stays unknown
    // until the ProviderRegistered event tells it (Number() of that text was NaN, and BigInt("NaN") blanked the page).
    const price = msg === "registry register sent" ? priceUnits(d.price) : null;
    if (price !== null) p.pricePerStep ??= price.toString();
  }
  if (msg === "progress" && typeof d.loss === "number" && d.job !== undefined) {
    const job = String(d.job);
    const key = address ? lower(address) : ([...s.names.entries()].find(([, n]) => n === source)?.[0] ?? source);
    const list = s.loss.get(job) ?? [];
    list.push({ ms, step: Number(d.step), loss: d.loss, provider: key });
    s.loss.set(job, list);
  }
}

export const SEPARATE_MACHINE = "Real, separate machine";

/**
 * "Real, separate machine" (a physical GPU on another computer): only for a provider that reported a GPU and whose
 * signed heartbeats name another machine than the dashboard server's; taken away when either stops being true.
 */
function separateMachineBadge(p: ProviderView) {
  if (p.kind === "GPU" && p.separateMachine === true) p.badges.add(SEPARATE_MACHINE);
  else p.badges.delete(SEPARATE_MACHINE);
}

/** What an agent's line says it is doing: training a job, or waiting for one; undefined keeps the last. */
function agentDetail(d: Log, msg: string): string | undefined {
  if (msg === "progress" && d.job !== undefined) return `job ${String(d.job)} step ${Number(d.step)}`;
  if (msg === "fenced: stopped writing to this job") return "fenced off its job";
  if (msg === "job complete: every step accepted") return "idle (its job is complete)";
  return undefined;
}

function addHeldoutLoss(s: RunState, job: string, step: number, loss: number) {
  const list = s.heldoutLoss.get(job) ?? [];
  if (!list.some((p) => p.step === step)) list.push({ step, loss });
  list.sort((a, b) => a.step - b.step);
  s.heldoutLoss.set(job, list);
}

function addSample(s: RunState, job: string, step: number, text: string) {
  const list = s.samples.get(job) ?? [];
  if (!list.some((p) => p.step === step)) list.push({ step, text });
  list.sort((a, b) => a.step - b.step);
  s.samples.set(job, list);
}

function addAccuracy(s: RunState, job: string, step: number, accuracy: number) {
  const list = s.accuracy.get(job) ?? [];
  if (!list.some((p) => p.step === step)) list.push({ step, accuracy });
  list.sort((a, b) => a.step - b.step);
  s.accuracy.set(job, list);
}

function applyMetric(s: RunState, ms: number, source: string, raw: unknown) {
  const d = (raw ?? {}) as Log;
  if (source === "safe" && Array.isArray(d.owners)) {
    s.safe = { threshold: Number(d.threshold), owners: d.owners.length };
    // The verifier Safe's owners, named as the CLI names them (verifier1, …) unless a log named them.
    for (const [owner, name] of Object.entries(verifierNames(d.owners.map(String)))) {
      if (!s.verifiers.has(owner)) s.verifiers.set(owner, name);
    }
    return;
  }
  if (source === "reserves" && d.held !== undefined) {
    s.reserves.push({ ms, block: Number(d.block), held: BigInt(String(d.held)), owes: BigInt(String(d.owes)) });
    s.lastBlock = Math.max(s.lastBlock, Number(d.block));
    seen(s, "reserves", "keeper", ms);
  }
}
