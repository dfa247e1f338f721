/**
 * Status: did it work, who got paid, what went wrong — in the first screen: the job's header (template by name,
 * state strip, what went wrong), the settlement card, the dispute window; then the curves with the failure story,
 * provider lanes on a time axis, verification, process health and the decoded events.
 */
import { useMemo } from "react";
import { FACT_LABELS } from "../../../sdk/words/factLabels.ts";
import { describeEvent, nameFrom, shortHash } from "../../../sdk/words/sentences.ts";
import { formatTime } from "../../../sdk/words/format.ts";
import { KEEPER_NAMES } from "../../../sdk/words/keeperNames.ts";
import { UnassignReason } from "../../../sdk/rules/job.ts";
import { DisputeCard, SettlementCard } from "../components/Settlement.tsx";
import { chainNow } from "../model/clock.ts";
import type uPlot from "uplot";
import { Chart, type Rule } from "../components/Chart.tsx";
import { EventFeed } from "../components/EventFeed.tsx";
import { useNow } from "../components/TopBar.tsx";
import type { PageProps } from "../context.ts";
import { ago, clock, short, usdc } from "../format.ts";
import { useChainRead } from "../hooks.ts";
import { ledgerOf, statusName, type LedgerJob } from "../ledger.ts";
import { nameOf, type ProcessView, type RunState } from "../model/state.ts";
import { lossRuns, type LossPoint } from "../model/lossRuns.ts";
import { chainDownWords, deploymentProblemOf } from "../model/deploymentProblem.ts";
import { templateOf, type TemplateInfo } from "../sources/config.ts";
import { isLossRules, metricText } from "../../../workloads/metric.ts";
import { DataTable } from "../components/DataTable.tsx";

const STRIP = ["Open", "Running", "Verdict", "Dispute window", "Settled"];

export function StatusPage(p: PageProps) {
  const { state } = p.run;
  const ledger = ledgerOf(state.events);
  const jobs = ledger ? [...ledger.jobs.values()] : [];
  const selected = jobs.find((j) => String(j.jobId) === p.view.job) ?? jobs[jobs.length - 1];
  const asOf = streamAsOf(p);
  return (
    <div className={`grid ${asOf ? "greyed-all" : ""}`}>
      {asOf && (
        <p className="card span-all stale-note" role="status" data-testid="stream-stale">
          The dashboard server&apos;s event stream is not answering: the jobs, payments and curves below are as of{" "}
          {asOf}, greyed until it reconnects (it retries by itself).
        </p>
      )}
      <section className="card span-all" aria-labelledby="jobs-h">
        <h2 id="jobs-h">Jobs</h2>
        {jobs.length === 0 ? (
          <p className="muted" data-testid="no-jobs">
            {noJobsText(ledger !== null, state, deploymentProblemOf(p.recorded, p.run.snapshot, p.config))}
          </p>
        ) : (
          <ul className="job-list">
            {jobs.map((j) => (
              <li key={String(j.jobId)}>
                <button aria-pressed={j === selected} onClick={() => p.go({ job: String(j.jobId) })}>
                  Job {String(j.jobId)} · {statusName(j, nowSec(p))} · {j.acceptedStep} / {j.totalSteps} steps
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      {selected && <JobCard {...p} job={selected} />}
      {selected && ledger && <SettlementCard state={state} ledger={ledger} job={selected} />}
      {selected && <DisputeCard job={selected} p={p} />}
      {selected && <Curves state={state} job={selected} template={templateOf(p.config, selected.templateId)} />}
      {selected && <Lanes state={state} job={selected} />}
      {selected && <Verification state={state} job={selected} />}
      <Health {...p} />
      <section className="card span-all" aria-labelledby="feed-h">
        <h2 id="feed-h">Event feed</h2>
        <EventFeed state={state} limit={60} id="status-feed" config={p.config} />
      </section>
    </div>
  );
}

/** Why no job is listed: none posted, nothing arrived yet, or books that cannot be rebuilt from a partial record. */
function noJobsText(booksKnown: boolean, state: RunState, deploymentProblem: string | null): string {
  if (!booksKnown && state.events.some((e) => e.name === "JobCreated"))
    return (
      "This record lacks events its books need (it starts after the escrow's first ones), so who is owed what " +
      "cannot be rebuilt here; its events are listed below."
    );
  if (deploymentProblem && !state.events.length) return `No job can be read: ${chainDownWords(deploymentProblem)}.`;
  return state.entries ? "No job posted yet." : "Waiting for the event stream…";
}

/**
 * Live, while the server's event stream is down: when its last entry came (the server's start + the entry's ms), as
 * "2026-…Z (N s ago)"; "its start" before any entry; null while it streams, and for a recording.
 */
function streamAsOf(p: PageProps): string | null {
  if (p.recorded || p.run.stream !== false) return null;
  const { state } = p.run;
  if (!state.entries || !p.config) return "its start (nothing arrived yet)";
  const at = p.config.serverStartedAt + state.ms;
  return `${formatTime(new Date(at))} (${ago(Date.now() - at)})`;
}

/** The chain's clock for the time-driven states: a recording's own moment, never the viewer's (model/clock.ts). */
function nowSec(p: PageProps): bigint {
  return chainNow(p.run.state, p.recorded, Date.now());
}

function stripIndex(status: string): number {
  if (status === "Open") return 0;
  if (status === "Running") return 1;
  if (status === "Dispute window" || status === "Disputed" || status === "Settleable" || status === "Arbiter timed out")
    return 3;
  if (status === "Settled") return 4;
  return -1;
}

function JobCard(p: PageProps & { job: LedgerJob }) {
  const { job } = p;
  const id = String(job.jobId);
  const status = statusName(job, nowSec(p));
  const at = stripIndex(status);
  const chainRead = useChainRead(p, `job-${id}`, async ({ escrow }, block) => {
    const at = { blockTag: block };
    const [j, s] = await Promise.all([escrow.jobOf(job.jobId, at), escrow.statusOf(job.jobId, at)]);
    return { acceptedStep: Number(j.acceptedStep), paid: BigInt(j.paid), epoch: BigInt(j.epoch), status: Number(s) };
  });
  const loss = p.run.state.loss.get(id) ?? [];
  const trained = loss.length ? loss[loss.length - 1].step : job.acceptedStep;
  const rate = stepRate(loss);
  const remainingSteps = job.totalSteps - Math.max(trained, job.acceptedStep);
  const eta = job.settlement || job.verdict ? null : rate ? remainingSteps / rate : null;
  const cancelled = status === "Cancelled";
  const c = chainRead.value;
  return (
    <section className="card span-all" aria-labelledby="job-h">
      <h2 id="job-h">
        Job {id}{" "}
        <span className="muted" data-testid="job-template">
          {templateName(p, job.templateId)}
        </span>
      </h2>
      <ol className="strip" aria-label={`State: ${status}`}>
        {(cancelled ? ["Open", "Cancelled"] : STRIP).map((s, i) => (
          <li
            key={s}
            className={cancelled ? (s === "Cancelled" ? "now" : "done") : i === at ? "now" : i < at ? "done" : ""}
            aria-current={(!cancelled && i === at) || (cancelled && s === "Cancelled") ? "step" : undefined}
          >
            {s}
          </li>
        ))}
      </ol>
      <p className={`did-it-work ${job.verdict ? (job.verdict.passed ? "ok" : "bad") : ""}`} data-testid="did-it-work">
        {didItWork(job, status, templateOf(p.config, job.templateId))}
      </p>
      <WhatWentWrong state={p.run.state} job={job} />
      <div className="facts">
        <Fact label="Accepted steps" testid="accepted-steps" value={`${job.acceptedStep} of ${job.totalSteps}`} />
        <Fact label={FACT_LABELS.lastReportedStep} value={loss.length ? `step ${trained}` : "no report yet"} />
        <Fact label="Budget locked" value={`${usdc(job.budget)} USDC`} />
        <Fact label="Paid to providers" testid="paid" value={`${usdc(job.paid)} USDC`} />
        <Fact label="Remaining" value={`${usdc(job.budget - job.paid)} USDC`} />
        <Fact label="Epoch" value={String(job.epoch)} />
        <Fact
          label="ETA at current rate"
          value={
            eta === null ? (job.verdict ? "done" : "unknown") : `${Math.round(eta)} s (${rate!.toFixed(1)} steps/s)`
          }
        />
        <Fact
          label={job.verdict ? "Last held by" : "Held by"}
          value={job.provider ? nameOf(p.run.state, job.provider) : "nobody"}
        />
      </div>
      {p.chain && (
        <p className={`proof ${chainRead.stale ? "stale" : ""}`} data-testid="job-chain-read">
          {c ? (
            <>
              Read by this page at block {chainRead.block}: <code>jobOf({id})</code> accepted step{" "}
              <b>{c.acceptedStep}</b>, paid <b>{usdc(c.paid)}</b> USDC, epoch {String(c.epoch)}
              {chainRead.stale
                ? ` (as of block ${chainRead.block}; ` +
                  `${chainDownWords(deploymentProblemOf(p.recorded, p.run.snapshot, p.config))})`
                : ""}
            </>
          ) : (
            "reading jobOf from the chain…"
          )}
        </p>
      )}
      <details>
        <summary>Check it yourself</summary>
        <pre>
          {[
            `cast call ${p.config?.deployment.escrow ?? "ESCROW"} "statusOf(uint256)(uint8)" ${id}` +
              ` --rpc-url ${p.config?.rpc ?? "RPC"}`,
            `npx gpuchain explain ${id} --rpc ${p.config?.rpc ?? "RPC"}` +
              ` --deployment ${p.config?.deploymentFile ?? "FILE"}`,
          ].join("\n")}
        </pre>
      </details>
    </section>
  );
}

/** Did it work: the verdict against the template's target, or where the job stands without one. */
function didItWork(job: LedgerJob, status: string, template?: TemplateInfo): string {
  if (job.verdict) {
    const metric = template ? metricText(template, BigInt(job.verdict.metric)) : `metric ${job.verdict.metric}`;
    return job.verdict.passed
      ? `It worked: the final model passed the template's rules — ${metric}.`
      : `The final model did not pass the template's rules — ${metric}.`;
  }
  if (status === "Cancelled")
    return `Cancelled${job.expired ? " (expired without progress)" : ""} after ${job.acceptedStep} of ${job.totalSteps} steps accepted.`;
  return `In progress: ${job.acceptedStep} of ${job.totalSteps} steps accepted so far; no verdict yet.`;
}

/** The template by its name; an id this software does not know is said to be one, with its hash. */
function templateName(p: PageProps, id: string): string {
  const t = templateOf(p.config, id);
  if (t) return `template ${t.name}`;
  return p.config ? `a template this dashboard does not know (${short(id)})` : `template ${short(id)}`;
}

/** Events that tell something went wrong on a job (each said in its one sentence, sdk/words/sentences.ts). */
const WRONG = new Set([
  "CheckpointRefused",
  "ProviderSlashed",
  "HoldForfeited",
  "ProviderUnassigned",
  "CheckpointLapsed",
  "DisputeOpened",
  "DisputeResolved",
  "ArbiterTimedOut",
  "JobExpired",
]);

/**
 * What went wrong on the job, from what happened: its refusals (with the verifiers' reasons), slashes, failovers,
 * lapses, a failed verdict and disputes — or that nothing did.
 */
function WhatWentWrong({ state, job }: { state: RunState; job: LedgerJob }) {
  const name = nameFrom({}, (a) => nameOf(state, a));
  const lines: string[] = [];
  for (const e of job.history) {
    if (!WRONG.has(e.event)) continue;
    // an unassignment after a refusal is the same fencing, said once
    if (e.event === "ProviderUnassigned" && Number(e.args.reason) === UnassignReason.Refused) continue;
    let line = describeEvent({ name: e.event, args: e.args }, name);
    if (e.event === "CheckpointRefused") {
      const c = state.checkpoints.get(`${job.jobId}:${e.args.epoch}:${e.args.step}`);
      const reasons = c ? [...new Set([...c.verifiers.values()].flatMap((v) => v.reasons))] : [];
      // hashes cut to their first bytes here; the verification table below has them whole
      if (reasons.length) line += ` — ${reasons.join("; ").replace(/0x[0-9a-fA-F]{64}/g, shortHash)}`;
    }
    lines.push(line);
  }
  if (job.verdict && !job.verdict.passed) lines.push("the final model did not pass the template's rules");
  return (
    <div className={`wrong ${lines.length ? "has-wrong" : ""}`} data-testid="what-went-wrong">
      <h3>What went wrong</h3>
      {lines.length === 0 ? (
        <p className="muted">Nothing so far: no refusal, slash, failover or dispute on this job.</p>
      ) : (
        <ul>
          {lines.map((l, i) => (
            <li key={i}>{l}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

function Fact({ label, value, testid }: { label: string; value: string; testid?: string }) {
  return (
    <div className="fact">
      <div className="fact-label">{label}</div>
      <div className="fact-value" data-testid={testid}>
        {value}
      </div>
    </div>
  );
}

function stepRate(loss: { ms: number; step: number; provider: string }[]): number | null {
  if (loss.length < 2) return null;
  const last = loss[loss.length - 1];
  const first = [...loss].reverse().find((x) => x.provider === last.provider && last.ms - x.ms >= 3000) ?? loss[0];
  if (first.provider !== last.provider || last.ms <= first.ms || last.step <= first.step) return null;
  return ((last.step - first.step) * 1000) / (last.ms - first.ms);
}

/** One colour per provider, in the order they first trained (none is the accuracy's green or the target's amber). */
const PROVIDER_COLORS = ["#60a5fa", "#fb923c", "#c084fc", "#f472b6", "#38bdf8", "#e879f9", "#a3e635", "#f87171"];

function Curves({ state, job, template }: { state: RunState; job: LedgerJob; template?: TemplateInfo }) {
  const id = String(job.jobId);
  const loss = state.loss.get(id) ?? [];
  const acc = state.accuracy.get(id) ?? [];
  const heldout = state.heldoutLoss.get(id) ?? [];
  const lossRules = template ? isLossRules(template.evalRules) : heldout.length > 0;
  const runs = useMemo(() => lossRuns(loss), [loss.length]);
  const providers = [...new Set(runs.map((r) => r.provider))];
  const colorOf = (who: string) => PROVIDER_COLORS[providers.indexOf(who) % PROVIDER_COLORS.length];
  const data = useMemo(() => {
    const steps = [
      ...new Set([0, ...loss.map((l) => l.step), ...acc.map((a) => a.step), ...heldout.map((h) => h.step)]),
    ].sort((a, b) => a - b);
    const accAt = new Map(acc.map((a) => [a.step, a.accuracy * (a.accuracy <= 1 ? 100 : 1)]));
    const heldAt = new Map(heldout.map((h) => [h.step, h.loss]));
    return [
      steps,
      ...runs.map((r) => {
        const at = new Map(r.points.map((p) => [p.step, p.loss]));
        return steps.map((s) => at.get(s) ?? null);
      }),
      steps.map((s) => (lossRules ? (heldAt.get(s) ?? null) : (accAt.get(s) ?? null))),
    ] as uPlot.AlignedData;
  }, [loss.length, acc.length, heldout.length, lossRules]);
  const series: uPlot.Series[] = [
    ...runs.map((r, i) => {
      const first = runs.findIndex((x) => x.provider === r.provider) === i;
      return {
        label: `${nameOf(state, r.provider)} loss${first ? "" : " (again)"}`,
        stroke: colorOf(r.provider),
        width: 2,
        spanGaps: true,
        points: { show: true, size: 4 },
      };
    }),
    lossRules
      ? {
          label: `${FACT_LABELS.checkpointLoss} (accepted checkpoints)`,
          stroke: "#e5e7eb",
          width: 2,
          spanGaps: true,
          points: { show: true, size: 7 },
        }
      : {
          label: "held-out accuracy %",
          stroke: "#34d399",
          width: 2,
          scale: "y2",
          spanGaps: true,
          points: { show: true, size: 7 },
        },
  ];
  const rules: Rule[] = state.markers
    .filter((m) => m.job === id && m.step !== undefined && (m.kind === "refusal" || m.kind === "failover"))
    .map((m) => ({ x: m.step!, label: m.label, color: m.kind === "refusal" ? "#f87171" : "#fbbf24" }));
  const target = targetLine(template);
  const samples = state.samples.get(id) ?? [];
  return (
    <section className="card span-all" aria-labelledby="curves-h">
      <h2 id="curves-h">{lossRules ? "Loss against step" : "Loss and held-out accuracy against step"}</h2>
      <Chart
        key={`${id}-${series.length}-${lossRules}`}
        label={`Loss${lossRules ? "" : " and accuracy"} of job ${id}, one colour per provider`}
        data={data}
        series={series}
        axes={{ x: "step", y: "loss", ...(lossRules ? {} : { y2: "accuracy %" }) }}
        scales={lossRules ? { x: { time: false } } : { x: { time: false }, y2: { range: [0, 100] } }}
        rules={rules}
        hline={target}
      />
      <ul className="legend-list" data-testid="curve-legend">
        {providers.map((w) => (
          <li key={w} data-testid={`curve-${nameOf(state, w)}`}>
            <span className="swatch" style={{ background: colorOf(w) }} aria-hidden="true" /> {nameOf(state, w)}:
            training loss from its heartbeats, steps{" "}
            {runs
              .filter((r) => r.provider === w)
              .map(stepSpan)
              .join(", ")}
          </li>
        ))}
        {target && (
          <li data-testid="curve-target">
            <span className="swatch" style={{ background: "#f59e0b" }} aria-hidden="true" /> {target.label}
          </li>
        )}
        {rules.map((r, i) => (
          <li key={i}>
            <span className="swatch" style={{ background: r.color }} aria-hidden="true" /> step {r.x}: {r.label}
          </li>
        ))}
        {!lossRules &&
          acc.map((a) => (
            <li key={`a${a.step}`}>
              accepted checkpoint at step {a.step}: held-out accuracy{" "}
              {(a.accuracy * (a.accuracy <= 1 ? 100 : 1)).toFixed(2)} %
            </li>
          ))}
        {lossRules &&
          heldout.map((h) => (
            <li key={`h${h.step}`}>
              accepted checkpoint at step {h.step}: {FACT_LABELS.checkpointLoss} {h.loss.toFixed(4)} nats per symbol (
              {FACT_LABELS.checkpointLossNote})
            </li>
          ))}
        {!loss.length && <li className="muted">No loss reported yet (live: from the providers&apos; heartbeats).</li>}
        {job.verdict && template && <li>verdict: {metricText(template, BigInt(job.verdict.metric))}</li>}
      </ul>
      {samples.length > 0 && (
        <>
          <h3 id="samples-h">Text from each accepted checkpoint</h3>
          <p className="muted">
            Greedy continuation of “Call me Ishmael. ” by the checkpoint&apos;s model, computed by the verifiers with
            the template&apos;s portable graph: every verifier and viewer gets the same text.
          </p>
          <ol className="samples" aria-labelledby="samples-h" data-testid="samples">
            {samples.map((x) => (
              <li key={x.step}>
                <span className="muted">step {x.step}</span> <q>{x.text}</q>
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

const stepSpan = (r: { points: LossPoint[] }) => `${r.points[0].step}–${r.points[r.points.length - 1].step}`;

/** The template's target as a line: held-out accuracy on the accuracy axis, held-out loss on the loss axis. */
function targetLine(t?: TemplateInfo): { y: number; label: string; scale?: string } | undefined {
  if (!t) return undefined;
  const r = t.evalRules;
  if (isLossRules(r)) return { y: r.targetLoss, label: `target: held-out loss ≤ ${r.targetLoss}` };
  const pct = r.targetAccuracy * 100;
  return { y: pct, label: `target: held-out accuracy ≥ ${pct.toFixed(0)} %`, scale: "y2" };
}

/**
 * Who held the job when, on the run's time axis: each assignment (epoch) as a bar, the heartbeats on it (the agent's
 * progress lines as dots, its on-chain lease extensions as ticks), and where it ended: fenced (refused), failed
 * over (taken away by the coordinator, lease lapsed), killed, or the verdict.
 */
function Lanes({ state, job }: { state: RunState; job: LedgerJob }) {
  const id = String(job.jobId);
  const lanes = state.lanes.filter((l) => l.job === id);
  if (!lanes.length) return null;
  const t0 = lanes[0].fromMs;
  const t1 = Math.max(state.ms, ...lanes.map((l) => l.toMs ?? state.ms), t0 + 1);
  const pos = (ms: number) => Math.min(100, Math.max(0, ((ms - t0) / (t1 - t0)) * 100));
  const who = [...new Set(lanes.map((l) => l.provider))];
  const progress = state.loss.get(id) ?? [];
  const leases = state.events.filter((e) => e.name === "LeaseExtended" && String(e.args.jobId) === id);
  const kills = state.markers.filter((m) => m.kind === "kill" && m.ms >= t0);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => t0 + f * (t1 - t0));
  return (
    <section className="card span-all" aria-labelledby="lanes-h">
      <h2 id="lanes-h">Provider lanes</h2>
      <p className="muted lane-key" aria-hidden="true">
        <span className="hb-dot" /> heartbeat (progress) <span className="lease-tick" /> lease extended on chain{" "}
        <span className="fence-mark" /> fenced or stopped
      </p>
      <div className="lanes" aria-hidden="true">
        {who.map((w) => (
          <div className="lane" key={w}>
            <div className="lane-name">{nameOf(state, w)}</div>
            <div className="lane-track">
              {lanes
                .filter((l) => l.provider === w)
                .map((l, i) => {
                  const left = pos(l.fromMs);
                  const width = Math.max(1, pos(l.toMs ?? t1) - left);
                  return (
                    <span
                      key={i}
                      className={`seg seg-${(l.end ?? "live").replace(/ /g, "-")}`}
                      style={{ left: `${left}%`, width: `${width}%` }}
                      title={
                        `epoch ${l.epoch}, from step ${l.resumeStep}, ` + (l.end ? `ended: ${l.end}` : "holding it now")
                      }
                    >
                      epoch {l.epoch}
                      {l.end ? ` · ${l.end}` : " · holding"}
                    </span>
                  );
                })}
              {progress
                .filter((x) => x.provider === w)
                .map((x, i) => (
                  <span key={`h${i}`} className="hb-dot" style={{ left: `${pos(x.ms)}%` }} />
                ))}
              {leases
                .filter((e) => String(e.args.provider).toLowerCase() === w)
                .map((e, i) => (
                  <span key={`l${i}`} className="lease-tick" style={{ left: `${pos(e.ms)}%` }} />
                ))}
              {lanes
                .filter((l) => l.provider === w && l.toMs !== undefined && l.end !== "verdict")
                .map((l, i) => (
                  <span key={`f${i}`} className="fence-mark" style={{ left: `${pos(l.toMs!)}%` }} />
                ))}
              {kills
                .filter((k) => k.label.startsWith(`${nameOf(state, w)} `))
                .map((k, i) => (
                  <span key={`k${i}`} className="kill-mark" style={{ left: `${pos(k.ms)}%` }} title={k.label} />
                ))}
            </div>
          </div>
        ))}
        <div className="lane lane-axis">
          <div />
          <div className="lane-ticks">
            {ticks.map((t, i) => (
              <span key={i} style={{ left: `${pos(t)}%` }}>
                {clock(t)}
              </span>
            ))}
          </div>
        </div>
      </div>
      <details>
        <summary>The lanes in words</summary>
        <ul className="lane-text" data-testid="lane-text">
          {lanes.map((l, i) => (
            <li key={i}>
              {nameOf(state, l.provider)} held job {id} in epoch {l.epoch} from step {l.resumeStep} at {clock(l.fromMs)}
              {l.end ? `; ended at ${clock(l.toMs!)}: ${laneEnd(l.end)} at step ${l.endStep}` : "; holding it now"} (
              {progress.filter((x) => x.provider === l.provider && inLane(x.ms, l)).length} heartbeats,{" "}
              {leases.filter((e) => String(e.args.provider).toLowerCase() === l.provider && inLane(e.ms, l)).length}{" "}
              lease extensions)
            </li>
          ))}
          {kills.map((k, i) => (
            <li key={`k${i}`}>
              {k.label} at {clock(k.ms)}
            </li>
          ))}
        </ul>
      </details>
    </section>
  );
}

const inLane = (ms: number, l: { fromMs: number; toMs?: number }) => ms >= l.fromMs && ms <= (l.toMs ?? Infinity);

function laneEnd(end: string): string {
  if (end === "refused") return "fenced (its checkpoint was refused)";
  if (end === "verdict") return "the verdict closed the job";
  return `failed over (${end})`;
}

function Verification({ state, job }: { state: RunState; job: LedgerJob }) {
  const id = String(job.jobId);
  const rows = [...state.checkpoints.values()]
    .filter((c) => c.job === id && c.hash)
    .sort((a, b) => a.reportedMs - b.reportedMs);
  return (
    <section className="card span-all" aria-labelledby="verify-h">
      <h2 id="verify-h">Verification (Quality Guard, 2 of 3)</h2>
      {rows.length === 0 ? (
        <p className="muted">No checkpoint reported yet.</p>
      ) : (
        <DataTable label="Checkpoints and signatures" columns={["Step", "Provider", "Decision", "Signed", "Reason"]}>
          {rows.map((c) => {
            const signers = [...c.signers];
            const reasons = [...new Set([...c.verifiers.values()].flatMap((v) => v.reasons))];
            return (
              <tr key={`${c.epoch}-${c.step}`}>
                <td className="num">{c.step}</td>
                <td>{nameOf(state, c.provider)}</td>
                <td>
                  <span className={`pill pill-${c.status}`}>
                    {c.status === "pending" ? "waiting for signatures" : c.status}
                  </span>
                </td>
                <td>{signedText(state, c.status, signers)}</td>
                <td className="reason">
                  {reasons.length
                    ? reasons.join("; ")
                    : c.status === "accepted"
                      ? "replay exact, evaluation within the template's rules"
                      : "—"}
                </td>
              </tr>
            );
          })}
        </DataTable>
      )}
    </section>
  );
}

/**
 * "2 of 3 signed: verifier1, verifier3". A decision on chain had at least the Safe's threshold of signatures
 * (the escrow asked the Safe); when the collector decided between two of the dashboard's reads, some signers
 * were not seen, and the text says so instead of guessing.
 */
function signedText(state: RunState, status: string, signers: string[]): string {
  const { threshold, owners } = state.safe;
  const names = signers.map((s) => nameOf(state, s)).join(", ");
  if (status !== "pending" && signers.length < threshold) {
    return `at least ${threshold} of ${owners} signed (checked by the Safe on chain)${names ? `; seen: ${names}` : ""}`;
  }
  return `${signers.length} of ${owners} signed${names ? `: ${names}` : ""}`;
}

type HealthRow = { name: string; role: string; state: string; seen: string; tone: string };

/**
 * Every keeper, verifier and provider: alive (and what it does), idle, quiet, stopped or killed — a dead process is
 * never the amber of an idle one. Live, from the server's snapshot: when the server stopped answering, the rows stay
 * greyed "as of" the last answer. Recorded, from the run's own lines at the moment on screen.
 */
function Health(p: PageProps) {
  const now = useNow(1000);
  const { state, snapshot, snapshotAt, snapshotError } = p.run;
  let rows: HealthRow[];
  const live = !p.recorded && snapshot !== null;
  if (live) {
    const asOf = snapshotError ? (snapshotAt ?? now) : now;
    const drift = snapshotAt ? asOf - snapshotAt : 0;
    rows = snapshot.processes.map((x) => liveRow(x, asOf, drift));
  } else rows = [...state.processes.values()].map((x) => recordedRow(x, state.ms));
  for (const k of KEEPER_NAMES) {
    if (rows.some((r) => r.name === k)) continue;
    rows.push({
      name: k,
      role: "keeper",
      state: "unknown",
      seen: live ? "no status endpoint the dashboard can ask; its transactions show in the events" : "never heard from",
      tone: "neutral",
    });
  }
  rows.sort((a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role));
  const stale = live && Boolean(snapshotError);
  return (
    <section className="card span-all" aria-labelledby="health-h">
      <h2 id="health-h">Process health</h2>
      {!p.recorded && snapshot && (
        <p className="muted">
          Indexed block {snapshot.indexedBlock} of head {snapshot.headBlock ?? "unknown"}
          {unconfirmed(snapshot)}
        </p>
      )}
      {stale && (
        <p className="stale-note" data-testid="health-stale">
          The dashboard server is not answering: these rows are as of {formatTime(new Date(snapshotAt ?? now))} (
          {ago(now - (snapshotAt ?? now))}).
        </p>
      )}
      <ul className={`health ${stale ? "greyed" : ""}`} data-testid="health">
        {rows.map((r) => (
          <li key={r.name} className={`tone-${r.tone}`} data-testid={`health-${r.name}`}>
            <span className="dot" aria-hidden="true" /> <b>{r.name}</b> <span className="muted">{r.role}</span>{" "}
            <span className="health-state">{r.state}</span> · {r.seen}
          </li>
        ))}
      </ul>
    </section>
  );
}

const ROLE_ORDER = ["keeper", "verifier", "provider", "chain", "dashboard"];

/**
 * A row from the live snapshot. A provider beats every second, so 10 s without a beat means stopped or cut off (red);
 * the dashboard sees a verifier only when it signs, so a quiet one is said to be quiet, not dead; a keeper or the
 * chain that does not answer is red.
 */
function liveRow(
  x: { name: string; role: string; lastSeenAt: number | null; detail?: string },
  now: number,
  drift: number,
): HealthRow {
  const row = (state: string, seen: string, tone: string) => ({ name: x.name, role: x.role, state, seen, tone });
  const quietRole = x.role === "verifier";
  if (x.lastSeenAt === null) {
    const state = x.detail === "not answering" ? "not answering" : "never heard from";
    return row(state, quietRole ? "no signature seen yet" : "never heard from", quietRole ? "neutral" : "bad");
  }
  const age = now - x.lastSeenAt;
  const seen = `last seen ${ago(age)}${x.detail ? ` · ${x.detail}` : ""}`;
  const late = age > 10_000 + drift || x.detail === "not answering";
  if (x.role === "verifier")
    return late
      ? row("quiet", `${seen} (the dashboard sees a verifier only when it signs)`, "neutral")
      : row("signing", seen, "good");
  if (x.role === "provider") {
    if (late) return row("no heartbeat", `${seen}: stopped or cut off`, "bad");
    return x.detail === "idle" ? row("idle", seen, "neutral") : row("working", seen, "good");
  }
  return late ? row("not answering", seen, "bad") : row("alive", seen, "good");
}

/** A row from the run's own lines at the moment on screen (`at`, run milliseconds). */
function recordedRow(x: ProcessView, at: number): HealthRow {
  const seen = `last line ${ago(at - x.lastSeenMs)} (run time ${clock(x.lastSeenMs)})`;
  if (x.ended?.how === "killed")
    return { name: x.name, role: x.role, state: "killed (SIGKILL)", seen: `at ${clock(x.ended.ms)}`, tone: "bad" };
  if (x.ended) return { name: x.name, role: x.role, state: "stopped", seen, tone: "off" };
  // Neither stopped nor killed: running, as far as the run's own lines tell (an idle agent may write nothing).
  const idle = x.detail?.startsWith("idle") ?? false;
  return {
    name: x.name,
    role: x.role,
    state: idle ? "running, idle" : "running",
    seen: `${seen}${x.detail && !idle ? ` · ${x.detail}` : ""}`,
    tone: idle ? "neutral" : "good",
  };
}

/** The head's unconfirmed blocks, said apart from the confirmed ones: they may still be replaced. */
function unconfirmed(s: { headBlock: number | null; confirmedBlock?: number | null }): string {
  if (s.headBlock === null || s.confirmedBlock === undefined || s.confirmedBlock === null) return "";
  if (s.confirmedBlock >= s.headBlock) return " · all confirmed";
  return ` · confirmed to block ${s.confirmedBlock}; blocks ${s.confirmedBlock + 1}–${s.headBlock} unconfirmed (may still be replaced)`;
}
