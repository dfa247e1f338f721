/** Provide compute: the one command for this network, then the chain followed to the provider's first earnings and their withdrawal. */
import { useMemo, useState } from "react";
import uPlot from "uplot";
import { Badges } from "../components/Badges.tsx";
import { Chart } from "../components/Chart.tsx";
import type { PageProps } from "../context.ts";
import { ago, baseUnits, usdc } from "../format.ts";
import {
  formatDuration,
  formatPrice,
  formatTime,
  formatUsdc,
  formatWait,
  usdcAmount,
  usdcUnits,
} from "../../../sdk/words/format.ts";
import { settleTiming } from "../../../sdk/rules/settleTiming.ts";
import { statusName as chainStatusName } from "../../../sdk/rules/job.ts";
import { chainNow } from "../model/clock.ts";
import { useNow } from "../components/TopBar.tsx";
import { priceStanding } from "../../../sdk/rules/jobFit.ts";
import { ledgerOf, providerSummaries, statusAt, walletOf, type LedgerJob } from "../ledger.ts";
import type { ProviderView, RunState } from "../model/state.ts";
import { DataTable } from "../components/DataTable.tsx";
import { describeSlash, RESTAKE_STATUS, restakeBookOf } from "../../../sdk/rules/restake.ts";
import { isProviderName, PROVIDER_NAME_RULE } from "../../../sdk/words/providerName.ts";
import {
  machineLocal,
  provideCommand,
  providerKeyFile,
  providerWithdrawCommand,
  STORE_UNKNOWN,
} from "../model/provideCommand.ts";
import { DEVICE_CHOICE, GPU_NOT_PROVEN } from "../model/deviceChoice.ts";
import { probationNote } from "../../../sdk/rules/probation.ts";

/** The command with the words to replace on another machine marked (its text is the command, unchanged). */
function MarkedCommand({ command }: { command: string }) {
  const words = command.split(/(?= --)|(?= npx )|(?= gpuchain )|(?= [A-Z_]+=)/);
  return (
    <>
      {words.map((w, i) =>
        machineLocal(w) ? (
          <mark key={i} title="replace when joining from another machine">
            {w}
          </mark>
        ) : (
          <span key={i}>{w}</span>
        ),
      )}
    </>
  );
}

/** What the command puts at stake, from the registry's own rules (read on chain by the dashboard server). */
function StakeNote({ rules }: { rules: NonNullable<PageProps["config"]>["stakeRules"] }) {
  if (!rules) {
    return (
      <p data-testid="provide-stake">
        It deposits stake in the provider registry (5 × its minimum; the registry could not be read just now).
      </p>
    );
  }
  const amount = BigInt(rules.minStake) * BigInt(rules.locks);
  return (
    <p data-testid="provide-stake">
      <strong>Stake at risk:</strong> it deposits {formatUsdc(amount)} of stake ({rules.locks} × the registry&apos;s
      minimum of {formatUsdc(BigInt(rules.minStake))}; on a local chain it mints that test USDC itself, on a public
      network the key must hold it). Each job you take locks part of it. If a verifier proves a fault in your work, the
      lock for that job is slashed (split between the client, the verifier who found the fault and the network fee) and
      your unclaimed earnings on that job are void; once your provider has delivered one accepted checkpoint, a machine
      that merely dies loses nothing but its unaccepted steps. Stake you ask back is withdrawable{" "}
      {formatDuration(rules.unbondingDelay)} later.
    </p>
  );
}

/** Probation, near the command: what one hold puts at risk at the price typed above. */
function ProbationNote({ minStake, price }: { minStake: string | undefined; price: bigint | null }) {
  return (
    <p data-testid="provide-probation">
      {minStake === undefined
        ? "On probation (until your provider's first accepted checkpoint), a hold that ends without an accepted " +
          "checkpoint forfeits its stake lock to the job's client."
        : probationNote(BigInt(minStake), price)}
    </p>
  );
}

export function ProvidePage(p: PageProps) {
  const [name, setName] = useState("my-gpu");
  const [priceText, setPrice] = useState("0.0010");
  const [cap, setCap] = useState("");
  const [copied, setCopied] = useState<string | null>(null);
  const mine = usdcUnits(priceText);
  const errors = [
    !isProviderName(name) ? `Name: ${PROVIDER_NAME_RULE}.` : "",
    mine === null ? "Price: a positive USDC amount with at most 6 decimals, e.g. 0.001." : "",
    cap && !/^[1-9]\d*$/.test(cap) ? "Memory cap: a whole number of MiB, or empty." : "",
  ].filter(Boolean);
  // The keepers may have started after the page loaded its config: the snapshot knows where they listen now.
  const coordinator = p.run.snapshot?.coordinator.url;
  const config = p.config && coordinator ? { ...p.config, coordinator } : p.config;
  const command = provideCommand(config, name, priceText, cap);
  const { state } = p.run;
  const providers = [...state.providers.values()];
  // The prices known so far (a provider whose registration has not landed yet has none): the page shows what it can.
  // Yours is not among them: once your device registers under this name, it is compared with the others only.
  const prices = providers
    .filter((x) => x.name !== name)
    .map((x) => baseUnits(x.pricePerStep))
    .filter((x): x is bigint => x !== null)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const standing = priceStanding(mine, prices);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(command);
      setCopied(name);
    } catch {
      setCopied(name); // the command is still selectable on the page
    }
  };
  return (
    <div className="grid">
      <section className="card span-2" aria-labelledby="offer-h">
        <h2 id="offer-h">Your offer</h2>
        <form className="form" onSubmit={(e) => e.preventDefault()}>
          <label>
            Name
            <input
              id="provide-name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              aria-invalid={!isProviderName(name)}
            />
          </label>
          <label>
            Price per step (USDC)
            <input
              id="provide-price"
              value={priceText}
              inputMode="decimal"
              onChange={(e) => setPrice(e.target.value.trim())}
            />
          </label>
          <label>
            Memory cap (MiB, optional)
            <input
              id="provide-cap"
              value={cap}
              inputMode="numeric"
              onChange={(e) => setCap(e.target.value.trim())}
              placeholder="whole device"
            />
          </label>
        </form>
        {errors.length > 0 && (
          <ul className="errors" role="alert">
            {errors.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
        )}
        <p>
          Run this on the machine that will train, from any folder: its paths are absolute (this installation, run
          through <code>npx --prefix</code>, the deployment file and the key). It creates a provider key (
          <code>{providerKeyFile(config, name) ?? ".gpuchain/providers/NAME/key"}</code>, 0600), reused by every later
          run, <span data-testid="device-choice">{DEVICE_CHOICE}</span>, registers the offer on chain and starts taking
          work. {GPU_NOT_PROVEN} It needs this repository installed (Node.js and <code>npm ci</code>; onnxruntime comes
          with it) and a little test ETH for gas: a new key prints its address and waits until it is funded. The
          variables in front, when there are any, reach this run's checkpoint store (an embedded S3 server with a fixed
          test key pair). On a local development chain <code>--faucet</code> takes that gas from the node itself (or
          fund any key with <code>npx gpuchain faucet ADDRESS --rpc URL</code>); on a public test network, send test ETH
          from a funded key. Joining from another machine: replace the <mark>marked</mark> parts (this machine&apos;s
          loopback address and the paths of this installation, the key and the deployment file) with this machine&apos;s
          address on your network, your own installation&apos;s folder and a copy of the file.
        </p>
        <StakeNote rules={config?.stakeRules ?? null} />
        <ProbationNote minStake={config?.stakeRules?.minStake} price={mine} />
        {config && config.store === null && (
          <p className="tone-warn" data-testid="store-unknown">
            This dashboard was started without <code>--store</code>, so it does not know where this network keeps its
            checkpoints: replace <code>{STORE_UNKNOWN}</code> with the network&apos;s store (ask its operator). A
            provider writing anywhere else has its checkpoints refused by the verifiers.
          </p>
        )}
        <div className="command">
          <pre data-testid="provide-command" aria-label="The command for this network">
            <MarkedCommand command={command} />
          </pre>
          <button
            onClick={copy}
            disabled={errors.length > 0 || p.recorded}
            aria-describedby={p.recorded ? "copy-recorded" : undefined}
          >
            Copy command
          </button>
        </div>
        {p.recorded && (
          <p className="muted" id="copy-recorded" data-testid="copy-recorded">
            A recorded run cannot be joined: switch the top bar to Live to copy the command for the network this
            dashboard watches.
          </p>
        )}
        {standing && mine !== null && (
          <p className="muted" data-testid="price-standing">
            At {formatPrice(mine)} you are cheaper than {standing.cheaperThan} of {standing.of} current providers (they
            ask {prices.map(usdcAmount).join(", ")} USDC/step); the coordinator picks the cheapest eligible provider.
          </p>
        )}
        {copied && <Follow state={state} name={copied} recorded={p.recorded} config={config} />}
      </section>
      <section className="card" aria-labelledby="ar-h">
        <h2 id="ar-h">Accepted vs refused</h2>
        <Bars providers={providers} />
      </section>
      <section className="card span-all" aria-labelledby="providers-h">
        <h2 id="providers-h">Providers</h2>
        <p className="muted">
          Earned and withdrawn as the escrow's events tell them up to block {p.run.state.lastBlock || "—"}
          {p.recorded ? " of the recording" : ""}.
        </p>
        <ProvidersTable {...p} providers={providers} />
      </section>
      <section className="card span-all" aria-labelledby="earn-h">
        <h2 id="earn-h">Cumulative earnings</h2>
        <Earnings state={state} providers={providers} />
      </section>
    </div>
  );
}

/**
 * After copying: waiting for your device… → registered at block N → first assignment → first accepted step →
 * credited X USDC on each job, withdrawable from T → the withdraw command → withdrawn.
 */
function Follow({
  state,
  name,
  recorded,
  config,
}: {
  state: RunState;
  name: string;
  recorded: boolean;
  config: PageProps["config"];
}) {
  const p = [...state.providers.values()].find((x) => x.name === name && x.registeredBlock !== undefined);
  const assigned = p?.firstAssignedMs !== undefined;
  const accepted = p?.firstAcceptedMs !== undefined;
  const firstAccepted = p
    ? state.events.find((e) => e.name === "CheckpointAccepted" && String(e.args.provider).toLowerCase() === p.key)
    : undefined;
  const firstAssigned = p
    ? state.events.find((e) => e.name === "ProviderAssigned" && String(e.args.provider).toLowerCase() === p.key)
    : undefined;
  // Its own words for what is in the way now (the signed heartbeat's problem), instead of a guess.
  const problem = p?.problem?.text;
  return (
    <ol className="follow" aria-label="Your device" aria-live="polite">
      <li className={p ? "done" : "now"}>
        {p
          ? "Device found"
          : recorded
            ? "Following a recorded run: no new device can join it"
            : "Waiting for your device…"}
      </li>
      <li className={p ? "done" : ""} data-testid="follow-registered">
        {p ? `Registered at block ${p.registeredBlock} as ${p.name} (${p.address})` : "Registered on chain"}
      </li>
      <li className={assigned ? "done" : p ? "now" : ""}>
        {assigned
          ? `First assignment: job ${firstAssigned?.args.jobId} at block ${firstAssigned?.blockNumber}`
          : "First assignment (when a job is open and your offer is the cheapest eligible)"}
      </li>
      <li className={accepted ? "done" : assigned ? "now" : ""}>
        {accepted
          ? `First accepted step: ${firstAccepted?.args.step} at block ${firstAccepted?.blockNumber}`
          : "First accepted step"}
      </li>
      {p && accepted && <Earned state={state} provider={p} recorded={recorded} config={config} name={name} />}
      {problem && !accepted && (
        <li className="problem" role="status" data-testid="follow-problem">
          Your device says: {problem}
        </li>
      )}
    </ol>
  );
}

/**
 * What the provider was credited on each job and from when it is withdrawable, by the escrow's rule: earnings are
 * claimable once the job is settled, settleable the second after its verdict + its dispute window
 * (sdk/rules/settleTiming.ts); then the exact command that claims and withdraws them, and what was withdrawn.
 */
function Earned({
  state,
  provider,
  recorded,
  config,
  name,
}: {
  state: RunState;
  provider: ProviderView;
  recorded: boolean;
  config: PageProps["config"];
  name: string;
}) {
  const wall = useNow(1000);
  const ledger = ledgerOf(state.events);
  if (!ledger) return null;
  const now = chainNow(state, recorded, wall);
  const mine = (m: Map<string, bigint>) =>
    [...m].filter(([a]) => a.toLowerCase() === provider.key).reduce((t, [, v]) => t + v, 0n);
  const jobs = [...ledger.jobs.values()]
    .map((j) => ({ j, owed: mine(j.earnings), claimed: mine(j.released) }))
    .filter((x) => x.owed > 0n || x.claimed > 0n);
  const withdrawn = walletOf(ledger, provider.address).withdrawn;
  const command = recorded ? providerWithdrawCommand(null, name) : providerWithdrawCommand(config, name);
  const clock = recorded ? "on the recording's clock" : "on this computer's clock";
  return (
    <>
      {jobs.map(({ j, owed, claimed }) => (
        <li key={String(j.jobId)} className="done" data-testid={`follow-credited-${j.jobId}`}>
          {`Credited ${formatUsdc(owed + claimed)} on job ${j.jobId}, `}
          {whenWithdrawable(j, owed, claimed, now, clock)}
        </li>
      ))}
      {jobs.length > 0 && (
        <li className={withdrawn > 0n ? "done" : "now"} data-testid="follow-withdraw">
          {withdrawn > 0n
            ? `Withdrawn ${formatUsdc(withdrawn)} to ${provider.address}`
            : "Withdraw: this claims what is claimable and sends it to your key's address"}
          {recorded && <span className="muted"> (the recorded network is not running: fill in its parts)</span>}
          <pre data-testid="withdraw-command">{command}</pre>
        </li>
      )}
    </>
  );
}

/** "withdrawable from T (in 59 min, …)", "withdrawable now", … for one job's credit. */
function whenWithdrawable(j: LedgerJob, owed: bigint, claimed: bigint, now: bigint, clock: string): string {
  if (owed === 0n) return "claimed: it is in what the escrow owes you";
  const status = chainStatusName(statusAt(j, now));
  const timing = settleTiming({
    status,
    verdictAt: (j.verdict?.disputeDeadline ?? 0n) - j.disputeWindow,
    disputeWindow: j.disputeWindow,
    disputeOpenedAt: j.dispute?.arbiterDeadline ?? 0n, // the event names the arbiter's deadline itself
    arbiterTimeout: 0n,
  });
  const part = claimed > 0n ? ` (${formatUsdc(claimed)} of it claimed)` : "";
  if (status === "Settled" || status === "Cancelled") return `withdrawable now${part}`;
  if (timing.kind === "at")
    return `withdrawable from ${formatTime(timing.from)} (${formatWait(timing.from, now)}, ${clock}), ${timing.why}, once the job is settled`;
  if (timing.kind === "now")
    return `withdrawable once the job is settled: ${timing.why} (the finalizer keeper settles it; anyone may: gpuchain settle ${j.jobId})`;
  return `withdrawable after settlement: the job's verdict after step ${j.totalSteps}, then its ${formatDuration(j.disputeWindow)} dispute window`;
}

function ProvidersTable(p: PageProps & { providers: ProviderView[] }) {
  const ledger = ledgerOf(p.run.state.events);
  const heartbeats = new Map((p.run.snapshot?.heartbeats ?? []).map((h) => [h.provider.toLowerCase(), h]));
  // Slashed for a proven fault and no stake deposited since: the coordinator assigns it nothing (sdk/rules/restake.ts).
  const restake = restakeBookOf(p.run.state.events);
  if (!p.providers.length) return <p className="muted">No provider registered yet.</p>;
  return (
    <DataTable
      label="Providers table"
      columns={[
        "Provider",
        "Badges",
        "Device",
        "Price / step",
        "Steps accepted",
        "Refused",
        "Earned",
        "Withdrawn",
        "Heartbeat",
        "Why",
      ]}
    >
      {p.providers.map((x) => {
        const hb = heartbeats.get(x.key);
        const withdrawn = ledger ? walletOf(ledger, x.address).withdrawn : null;
        const why = ledger
          ? [...ledger.jobs.values()]
              .map((j) => providerSummaries(j).find((s) => s.provider === x.key)?.why)
              .filter(Boolean)
              .join("; ")
          : "";
        // The coordinator's own reason for its latest take-away, where it told one (the chain cannot).
        const taken = x.takenAway.at(-1);
        const coordinatorSaid = taken ? `the coordinator took job ${taken.job} away: ${taken.reason}` : "";
        const registered = x.registeredBlock !== undefined;
        const slash = restake.awaiting(x.key);
        return (
          <tr key={x.key} data-testid={`provider-${x.name}`}>
            <th scope="row">
              {x.name}
              <div className="muted mono">{x.address}</div>
              {registered && <div className="muted">registered at block {x.registeredBlock}</div>}
              {slash && (
                <div
                  className="error"
                  data-testid={`restake-${x.name}`}
                  title={`${describeSlash(slash)}: the coordinator assigns it no job until it deposits stake again`}
                >
                  {RESTAKE_STATUS}
                  <div className="muted">{describeSlash(slash)}</div>
                </div>
              )}
            </th>
            <td>
              <Badges names={[...x.badges]} />
            </td>
            <td>
              {x.deviceModel ? `${x.deviceModel}, ${x.kind}` : "unknown"}
              {x.memoryMiB ? `, ${x.memoryMiB} MiB` : ""}
            </td>
            <td className="num">{usdc(x.pricePerStep)}</td>
            <td className="num">{x.accepted}</td>
            <td className="num">{x.refused}</td>
            <td className="num">{usdc(x.earned)}</td>
            <td className="num">{withdrawn === null ? "unknown" : usdc(withdrawn)}</td>
            <td>
              {hb?.problem && <div className="error">{hb.problem}</div>}
              {hb
                ? `${ago(hb.ageMs)}${hb.job !== "0" ? ` · job ${hb.job} step ${hb.step}` : " · idle"}`
                : p.recorded
                  ? x.lastSeenMs !== undefined
                    ? `${ago(p.run.state.ms - x.lastSeenMs)} (run time)`
                    : "—"
                  : "no heartbeat"}
            </td>
            <td className="reason">
              {coordinatorSaid && <div data-testid={`taken-away-${x.name}`}>{coordinatorSaid}</div>}
              {why ||
                (x.refusals.length
                  ? x.refusals
                      .map((r) => `refused step ${r.step}: ${r.reasons.join("; ") || "Quality Guard"}`)
                      .join(" · ")
                  : "not assigned yet")}
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}

function Bars({ providers }: { providers: ProviderView[] }) {
  const max = Math.max(1, ...providers.map((p) => p.accepted));
  const maxRefused = Math.max(1, ...providers.map((p) => p.refused));
  return (
    <ul className="bars" aria-label="Accepted steps and refused checkpoints per provider">
      {providers.map((p) => (
        <li key={p.key}>
          <span className="bar-name">{p.name}</span>
          <span className="bar-track">
            <span className="bar bar-ok" style={{ width: `${(p.accepted / max) * 100}%` }} />
          </span>
          <span className="num">{p.accepted} accepted</span>
          <span className="bar-track small">
            <span className="bar bar-bad" style={{ width: `${(p.refused / maxRefused) * 100}%` }} />
          </span>
          <span className="num">{p.refused} refused</span>
        </li>
      ))}
      {!providers.length && <li className="muted">No provider yet.</li>}
    </ul>
  );
}

const STEPPED = uPlot.paths.stepped!({ align: 1 });
const COLORS = ["#60a5fa", "#34d399", "#f472b6", "#fbbf24", "#a78bfa", "#f87171"];

function Earnings({ state, providers }: { state: RunState; providers: ProviderView[] }) {
  const earners = providers.filter((p) => p.earnings.length);
  const data = useMemo(() => {
    const times = [
      ...new Set([0, ...earners.flatMap((p) => p.earnings.map((e) => e.ms / 1000)), state.ms / 1000]),
    ].sort((a, b) => a - b);
    const series = earners.map((p) => times.map((t) => p.earnings.filter((e) => e.ms / 1000 <= t).at(-1)?.total ?? 0));
    return [times, ...series] as uPlot.AlignedData;
  }, [earners.map((p) => p.earnings.length).join(","), Math.floor(state.ms / 5000)]);
  if (!earners.length) return <p className="muted">No accepted work yet: providers earn only for accepted steps.</p>;
  return (
    <Chart
      label="Cumulative earnings per provider, in USDC, over run time"
      data={data}
      series={earners.map((p, i) => ({ label: p.name, stroke: COLORS[i % COLORS.length], width: 2, paths: STEPPED }))}
      axes={{ x: "run time (s)", y: "USDC" }}
      height={200}
    />
  );
}
