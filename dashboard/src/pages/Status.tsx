/** Status: jobs; one job's state strip, progress, budget, curves with the failure story; lanes; verification. */
import { useMemo } from "react";
import type uPlot from "uplot";
import { Chart, type Rule } from "../components/Chart.tsx";
import { EventFeed } from "../components/EventFeed.tsx";
import { useNow } from "../components/TopBar.tsx";
import type { PageProps } from "../context.ts";
import { ago, short, usdc } from "../format.ts";
import { useChainRead } from "../hooks.ts";
import { ledgerOf, providerSummaries, statusName, type LedgerJob } from "../ledger.ts";
import { nameOf, type RunState } from "../model/state.ts";
import { templateOf, type TemplateInfo } from "../sources/config.ts";
import { isLossRules, metricText } from "../../../workloads/metric.ts";
import { DataTable } from "../components/DataTable.tsx";

const STRIP = ["Open", "Running", "Verdict", "Dispute window", "Settled"];

export function StatusPage(p: PageProps) {
  const { state } = p.run;
  const ledger = ledgerOf(state.events);
  const jobs = ledger ? [...ledger.jobs.values()] : [];
  const selected = jobs.find((j) => String(j.jobId) === p.view.job) ?? jobs[jobs.length - 1];
  return (
    <div className="grid">
      <section className="card span-all" aria-labelledby="jobs-h">
        <h2 id="jobs-h">Jobs</h2>
        {jobs.length === 0 ? (
          <p className="muted">{state.entries ? "No job posted yet." : "Waiting for the event stream…"}</p>
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
      {selected && <Curves state={state} job={selected} template={templateOf(p.config, selected.templateId)} />}
      {selected && <Lanes state={state} job={selected} />}
      {selected && <Verification state={state} job={selected} />}
      <section className="card span-all" aria-labelledby="feed-h">
        <h2 id="feed-h">Event feed</h2>
        <EventFeed state={state} limit={60} id="status-feed" config={p.config} />
      </section>
      <Health {...p} />
    </div>
  );
}

function nowSec(_p: PageProps): bigint {
  return BigInt(Math.floor(Date.now() / 1000));
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
        <span className="muted">template {templateOf(p.config, job.templateId)?.name ?? short(job.templateId)}</span>
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
      <div className="facts">
        <Fact label="Accepted steps" testid="accepted-steps" value={`${job.acceptedStep} of ${job.totalSteps}`} />
        <Fact label="Trained (heartbeats)" value={loss.length ? `step ${trained}` : "no report yet"} />
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
              {chainRead.stale ? ` (as of block ${chainRead.block}; the chain is not answering)` : ""}
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

function Curves({ state, job, template }: { state: RunState; job: LedgerJob; template?: TemplateInfo }) {
  const id = String(job.jobId);
  const loss = state.loss.get(id) ?? [];
  const acc = state.accuracy.get(id) ?? [];
  const data = useMemo(() => {
    const steps = [...new Set([0, ...loss.map((l) => l.step), ...acc.map((a) => a.step)])].sort((a, b) => a - b);
    const lossAt = new Map(loss.map((l) => [l.step, l.loss]));
    const accAt = new Map(acc.map((a) => [a.step, a.accuracy * (a.accuracy <= 1 ? 100 : 1)]));
    return [
      steps,
      steps.map((s) => lossAt.get(s) ?? null),
      steps.map((s) => accAt.get(s) ?? null),
    ] as uPlot.AlignedData;
  }, [loss.length, acc.length]);
  const rules: Rule[] = state.markers
    .filter((m) => m.job === id && m.step !== undefined && (m.kind === "refusal" || m.kind === "failover"))
    .map((m) => ({ x: m.step!, label: m.label, color: m.kind === "refusal" ? "#f87171" : "#fbbf24" }));
  // the verdict line is drawn on the accuracy axis only for templates judged by accuracy
  const verdict = job.verdict && template && !isLossRules(template.evalRules) ? Number(job.verdict.metric) / 100 : null;
  const samples = state.samples.get(id) ?? [];
  return (
    <section className="card span-all" aria-labelledby="curves-h">
      <h2 id="curves-h">Loss and held-out accuracy against step</h2>
      <Chart
        label={`Loss and accuracy of job ${id}`}
        data={data}
        series={[
          { label: "loss", stroke: "#60a5fa", width: 2, spanGaps: true, points: { show: true, size: 4 } },
          {
            label: "held-out accuracy %",
            stroke: "#34d399",
            width: 2,
            scale: "y2",
            spanGaps: true,
            points: { show: true, size: 7 },
          },
        ]}
        axes={{ x: "step", y: "loss", y2: "accuracy %" }}
        scales={{ x: { time: false }, y2: { range: [0, 100] } }}
        rules={rules}
        hline={verdict !== null ? { y: verdict, label: `verdict ${verdict.toFixed(2)} %`, scale: "y2" } : undefined}
      />
      <ul className="legend-list">
        {rules.map((r, i) => (
          <li key={i}>
            <span className="swatch" style={{ background: r.color }} aria-hidden="true" /> step {r.x}: {r.label}
          </li>
        ))}
        {acc.map((a) => (
          <li key={`a${a.step}`}>
            accepted checkpoint at step {a.step}: held-out accuracy{" "}
            {(a.accuracy * (a.accuracy <= 1 ? 100 : 1)).toFixed(2)} %
          </li>
        ))}
        {!loss.length && <li className="muted">No loss reported yet (live: from the providers' heartbeats).</li>}
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

function Lanes({ state, job }: { state: RunState; job: LedgerJob }) {
  const id = String(job.jobId);
  const lanes = state.lanes.filter((l) => l.job === id);
  const now = useNow(2000);
  if (!lanes.length) return null;
  const t0 = lanes[0].fromMs;
  const t1 = Math.max(state.ms, ...lanes.map((l) => l.toMs ?? state.ms), t0 + 1);
  const who = [...new Set(lanes.map((l) => l.provider))];
  void now;
  return (
    <section className="card span-all" aria-labelledby="lanes-h">
      <h2 id="lanes-h">Provider lanes</h2>
      <div className="lanes">
        {who.map((w) => (
          <div className="lane" key={w}>
            <div className="lane-name">{nameOf(state, w)}</div>
            <div className="lane-track">
              {lanes
                .filter((l) => l.provider === w)
                .map((l, i) => {
                  const left = ((l.fromMs - t0) / (t1 - t0)) * 100;
                  const width = Math.max(1, (((l.toMs ?? t1) - l.fromMs) / (t1 - t0)) * 100);
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
            </div>
          </div>
        ))}
      </div>
      <ul className="sr-only">
        {lanes.map((l, i) => (
          <li key={i}>
            {nameOf(state, l.provider)} held job {id} in epoch {l.epoch} from step {l.resumeStep}
            {l.end ? `; ended: ${l.end} at step ${l.endStep}` : "; holding it now"}
          </li>
        ))}
      </ul>
    </section>
  );
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
      <p className="muted">
        Providers paid so far:{" "}
        {providerSummaries(job)
          .map((s) => `${nameOf(state, s.provider)} ${usdc(s.earned)} USDC for ${s.stepsAccepted} steps`)
          .join(" · ") || "nobody yet"}
        {job.pricePerStep ? ` · current price ${usdc(job.pricePerStep)} USDC/step` : ""}
      </p>
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

function Health(p: PageProps) {
  const now = useNow(1000);
  const { state, snapshot, snapshotAt } = p.run;
  type Row = { name: string; role: string; seen: string; tone: string };
  let rows: Row[];
  if (!p.recorded && snapshot) {
    const drift = snapshotAt ? now - snapshotAt : 0;
    rows = snapshot.processes.map((x) => {
      const age = x.lastSeenAt === null ? null : now - x.lastSeenAt;
      return {
        name: x.name,
        role: x.role,
        seen: age === null ? "never seen" : `${ago(age)}${x.detail ? ` · ${x.detail}` : ""}`,
        tone: age === null ? "bad" : age > 10_000 + drift ? "warn" : "good",
      };
    });
  } else {
    rows = [...state.processes.values()].map((x) => {
      const age = state.ms - x.lastSeenMs;
      return { name: x.name, role: x.role, seen: `${ago(age)} (run time)`, tone: age > 10_000 ? "warn" : "good" };
    });
  }
  return (
    <section className="card span-all" aria-labelledby="health-h">
      <h2 id="health-h">Process health</h2>
      {!p.recorded && snapshot && (
        <p className="muted">
          Indexed block {snapshot.indexedBlock} of head {snapshot.headBlock ?? "unknown"}
          {unconfirmed(snapshot)}
        </p>
      )}
      {rows.length === 0 ? (
        <p className="muted">No process heard from yet.</p>
      ) : (
        <ul className="health">
          {rows.map((r) => (
            <li key={r.name} className={`tone-${r.tone}`}>
              <span className="dot" aria-hidden="true" /> <b>{r.name}</b> <span className="muted">{r.role}</span>
              {" · last seen "}
              {r.seen}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The head's unconfirmed blocks, said apart from the confirmed ones (issue 22): they may still be replaced. */
function unconfirmed(s: { headBlock: number | null; confirmedBlock?: number | null }): string {
  if (s.headBlock === null || s.confirmedBlock === undefined || s.confirmedBlock === null) return "";
  if (s.confirmedBlock >= s.headBlock) return " · all confirmed";
  return ` · confirmed to block ${s.confirmedBlock}; blocks ${s.confirmedBlock + 1}–${s.headBlock} unconfirmed (may still be replaced)`;
}
