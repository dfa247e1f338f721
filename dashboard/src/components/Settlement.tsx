/**
 * Who got paid and why, and the dispute window: the settlement table `npm start` ends with (demo/report.ts) and
 * `gpuchain explain` prints, from the same ledger facts (sdk/rules/ledger.ts, sdk/words/narrative.ts providerSummaries: steps
 * accepted, refused, earned, stake slashed, why), and the verdict's deadline counted down on the run's own clock.
 */
import { useState } from "react";
import { formatTime, formatUsdc, formatWait } from "../../../sdk/words/format.ts";
import { clientCompensation, stakeBookOf } from "../../../sdk/rules/ledger.ts";
import { settleTiming } from "../../../sdk/rules/settleTiming.ts";
import { STAKE_LABELS } from "../../../sdk/rules/stake.ts";
import { statusName as chainStatusName } from "../../../sdk/rules/job.ts";
import type { PageProps } from "../context.ts";
import { usdc } from "../format.ts";
import { JobStatus, providerSummaries, statusAt, walletOf, type Ledger, type LedgerJob } from "../ledger.ts";
import { chainNow } from "../model/clock.ts";
import { useNow } from "./TopBar.tsx";
import { nameOf, type RunState } from "../model/state.ts";
import { DataTable } from "./DataTable.tsx";

/** lowercase address → name, for the finder of a slash and every provider (the ledger's `names` shape). */
function namesOf(state: RunState): Record<string, string> {
  return Object.fromEntries([...state.verifiers, ...state.names]);
}

/** Whether the stream carried the registry's stake events: without them a stake is unknown, never zero. */
const stakesSeen = (state: RunState) => state.events.some((e) => e.name === "StakeDeposited");

export function SettlementCard({ state, ledger, job }: { state: RunState; ledger: Ledger; job: LedgerJob }) {
  const id = String(job.jobId);
  const rows = providerSummaries(job, namesOf(state));
  const stakes = stakesSeen(state);
  const toClient = clientCompensation(job);
  const s = job.settlement;
  const outcome = s
    ? `Job ${id} ${job.phase === JobStatus.Cancelled ? "was cancelled" : "settled"}: providers paid ${formatUsdc(s.providersPaid)}, ` +
      `client refund ${formatUsdc(s.refund)}`
    : `Job ${id} is not settled yet: ${formatUsdc(job.paid)} credited to providers so far, payable once it settles`;
  return (
    <section className="card span-all settlement" aria-labelledby="settle-h" data-testid="settlement">
      <h2 id="settle-h">Who got paid, and why</h2>
      <p className="outcome" data-testid="settlement-outcome">
        {outcome}
        {toClient > 0n ? `; slashed and forfeited stake to the client ${formatUsdc(toClient)}` : ""}
        {s && s.bondReturned > 0n ? `; dispute bond returned ${formatUsdc(s.bondReturned)}` : ""}
        {s && s.bondForfeited > 0n ? `; dispute bond forfeited ${formatUsdc(s.bondForfeited)}` : ""}.
      </p>
      {rows.length === 0 ? (
        <p className="muted">No provider has held this job yet.</p>
      ) : (
        <DataTable
          label="Settlement per provider"
          columns={[
            "Provider",
            "Steps accepted",
            "Refused",
            "Earned USDC",
            "Withdrawn USDC",
            "Stake slashed USDC",
            ...(stakes ? [`Stake ${STAKE_LABELS.paidIn} / ${STAKE_LABELS.held} USDC`] : []),
            "Why",
          ]}
        >
          {rows.map((r) => {
            const book = stakeBookOf(ledger, r.provider);
            return (
              <tr key={r.provider} data-testid={`settle-${nameOf(state, r.provider)}`}>
                <th scope="row">{nameOf(state, r.provider)}</th>
                <td className="num">{r.stepsAccepted}</td>
                <td className="num">{r.checkpointsRefused}</td>
                <td className="num">{usdc(r.earned)}</td>
                <td className="num">{usdc(walletOf(ledger, r.provider).withdrawn)}</td>
                <td className={`num ${r.slashed > 0n ? "bad-text" : ""}`}>{usdc(r.slashed)}</td>
                {stakes && <td className="num">{stakeCell(book)}</td>}
                <td className="reason">{r.why}</td>
              </tr>
            );
          })}
        </DataTable>
      )}
      {!stakes && rows.length > 0 && (
        <p className="muted">
          This record carries no registry stake events, so deposits and what is left are not shown; slashes come from
          the escrow&apos;s ProviderSlashed events.
        </p>
      )}
    </section>
  );
}

/**
 * What the provider paid into its stake over the records shown and what the registry holds for it now (after
 * slashes), with the part a job still locks: npm start's table has the same figures (demo/report.ts stakeCell).
 */
function stakeCell(book: { paidIn: bigint; deposited: bigint; locked: bigint }): string {
  const cell = `${usdc(book.paidIn)} / ${usdc(book.deposited)}`;
  return book.locked > 0n ? `${cell} (${usdc(book.locked)} locked)` : cell;
}

/**
 * The verdict's dispute window: its deadline with a countdown on the run's clock (`now`, chain seconds), the
 * command the client runs to dispute, and when the job can be settled. A recording counts down on its own clock
 * (model/clock.ts), so it shows what was true at its moment.
 */
export function DisputeCard({ job, p }: { job: LedgerJob; p: PageProps }) {
  const [copied, setCopied] = useState(false);
  const wall = useNow(1000); // a live countdown ticks; a recording's follows its own clock
  if (!job.verdict) return null;
  const now = chainNow(p.run.state, p.recorded, wall);
  const id = String(job.jobId);
  const deadline = job.verdict.disputeDeadline;
  const status = chainStatusName(statusAt(job, now));
  const timing = settleTiming({
    status,
    verdictAt: deadline - job.disputeWindow,
    disputeWindow: job.disputeWindow,
    // The dispute event names the arbiter's deadline itself: opened + timeout, with a timeout of 0 here.
    disputeOpenedAt: job.dispute?.arbiterDeadline ?? 0n,
    arbiterTimeout: 0n,
  });
  // A recording's network is gone: its command is shown with the parts to fill in, not this dashboard's RPC.
  const common = p.recorded
    ? "--rpc RPC_URL --deployment DEPLOYMENT_FILE"
    : `--rpc ${p.config?.rpc ?? "RPC_URL"} --deployment ${p.config?.deploymentFile ?? "DEPLOYMENT_FILE"}`;
  const open = status === "DisputeWindow";
  const command = open
    ? `npx gpuchain dispute ${id} --key CLIENT_KEY_FILE ${common}`
    : `npx gpuchain settle ${id} --key ANY_KEY_FILE ${common}`;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(command);
    } catch {
      /* the command stays selectable on the page */
    }
    setCopied(true);
  };
  const clock = p.recorded ? "on the recording's clock" : "on this computer's clock";
  const until = (at: bigint) => `${formatTime(at)} (${formatWait(at, now)}, ${clock})`;
  return (
    <section className="card span-all" aria-labelledby="dispute-h" data-testid="dispute-card">
      <h2 id="dispute-h">Dispute window</h2>
      <p data-testid="dispute-deadline">
        {open ? (
          <>
            The client may dispute the verdict until <b>{until(deadline)}</b>, posting the escrow&apos;s bond; the
            arbiter then has 3 days.
          </>
        ) : job.dispute ? (
          <>
            Disputed with a {formatUsdc(job.dispute.bond)} bond; the arbiter may decide until{" "}
            <b>{until(job.dispute.arbiterDeadline)}</b>
            {job.dispute.resolved
              ? job.dispute.timedOut
                ? ": it stayed silent, the verdict stands and the bond came back."
                : job.dispute.upheld
                  ? ": it upheld the dispute, the job's provider payments are void."
                  : ": it rejected the dispute, the verdict stands and the bond is forfeited."
              : "."}
          </>
        ) : (
          <>The dispute window ended at {formatTime(deadline)} without a dispute.</>
        )}
      </p>
      <p className="muted" data-testid="settle-timing">
        {timing.kind === "at"
          ? `Settleable ${timing.why}: from ${until(timing.from)}.`
          : timing.kind === "now"
            ? `Settleable now: ${timing.why}. Anyone may settle it (the finalizer keeper does).`
            : `Settlement: ${timing.why}.`}
      </p>
      {timing.kind !== "done" && p.recorded && (
        <p className="muted">The recorded network is not running: the command has its RPC and deployment to fill in.</p>
      )}
      {timing.kind !== "done" && (
        <div className="command">
          <pre data-testid={open ? "dispute-command" : "settle-command"}>{command}</pre>
          <button type="button" onClick={() => void copy()}>
            {copied ? "Copied" : open ? "Copy the dispute command" : "Copy the settle command"}
          </button>
        </div>
      )}
    </section>
  );
}
