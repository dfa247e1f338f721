/**
 * On-chain: Check any wallet (read by this browser from the RPC, with the call and the block), live proof of
 * reserves with a held-vs-owed plot, the contracts and the Safe's owners and threshold, every escrow event.
 */
import { getAddress, isAddress } from "ethers";
import { useMemo, useState } from "react";
import type uPlot from "uplot";
import { Chart } from "../components/Chart.tsx";
import { EventFeed } from "../components/EventFeed.tsx";
import type { PageProps } from "../context.ts";
import { short, usdc } from "../format.ts";
import { useChainRead } from "../hooks.ts";
import { chainDownWords, deploymentProblemOf } from "../model/deploymentProblem.ts";
import { ledgerOf, type Ledger } from "../ledger.ts";
import { jobSentences, stakeSentence, walletFacts, type WalletFacts } from "../../../sdk/rules/walletFacts.ts";
import { verifierNames } from "../../../sdk/words/narrative.ts";
import { decodeLogs } from "../../../sdk/node/events.ts";
import { foldEscrowEvents } from "../../../sdk/rules/ledger.ts";
import { readLogs } from "../../../sdk/node/logRange.ts";
import { owedParts, readReserves, type ReservesSource } from "../../../sdk/rules/reserves.ts";

export function OnChainPage(p: PageProps) {
  return (
    <div className="grid">
      <Wallet {...p} />
      <Reserves {...p} />
      <Contracts {...p} />
      <section className="card span-all" aria-labelledby="log-h">
        <h2 id="log-h">Every escrow event</h2>
        <EventFeed state={p.run.state} limit={500} id="onchain-feed" config={p.config} />
      </section>
      <CheckYourself {...p} />
    </div>
  );
}

interface WalletRead {
  who: string;
  block: number;
  owed: bigint | null; // the contract's owed(who); null in a recording
  /** The registry's stakeOf(who); null in a recording. */
  stake: { deposited: bigint; locked: bigint; unbonding: bigint } | null;
  /** The same facts `gpuchain wallet` prints (sdk/rules/walletFacts.ts), from the events up to `block`. */
  facts: WalletFacts;
  source: "chain" | "recording";
}

function Wallet(p: PageProps) {
  const [text, setText] = useState("");
  const [liveRead, setRead] = useState<WalletRead | null>(null);
  /** A recording's checked address: its facts follow the playback (the events fold in as it plays). */
  const [recordedWho, setRecordedWho] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const valid = isAddress(text.trim());
  const hint = addressHint(text);
  const check = async () => {
    if (!valid) return;
    const who = getAddress(text.trim());
    setBusy(true);
    setError(null);
    try {
      if (p.chain) {
        const chain = p.chain;
        const block = await chain.read(() => chain.provider.getBlockNumber());
        const from = await chain.deploymentStart(block);
        const [owed, stake, owners, escrowLogs, registryLogs] = await Promise.all([
          chain.read(() => chain.escrow.owed(who, { blockTag: block }) as Promise<bigint>),
          chain.read(() => chain.registry.stakeOf(who, { blockTag: block }) as Promise<WalletRead["stake"]>),
          chain.read(() => chain.safe.getOwners() as Promise<string[]>),
          chain.read(() => readLogs(chain.provider, { address: String(chain.escrow.target) }, from, block)),
          chain.read(() => readLogs(chain.provider, { address: String(chain.registry.target) }, from, block)),
        ]);
        const ledger = foldEscrowEvents([
          ...decodeLogs(chain.escrow.interface, escrowLogs),
          ...decodeLogs(chain.registry.interface, registryLogs),
        ]);
        const { deposited, locked, unbonding } = stake!;
        const facts = walletFacts(ledger, who, namesOf(p, [...owners]));
        setRead({ who, block, owed: BigInt(owed), stake: { deposited, locked, unbonding }, facts, source: "chain" });
      } else {
        if (!ledgerOf(p.run.state.events)) throw new Error("the recording's events do not make a complete ledger");
        setRead(null);
        setRecordedWho(who);
      }
    } catch (err) {
      const problem = deploymentProblemOf(p.recorded, p.run.snapshot, p.config);
      const why = problem ? chainDownWords(problem) : String((err as Error).message ?? err).slice(0, 160);
      setError(`could not read the chain: ${why}; the last result stays below`);
    } finally {
      setBusy(false);
    }
  };
  const ledger = ledgerOf(p.run.state.events);
  // Not a snapshot of the moment Check was pressed: a click while the recording still loads or plays would keep
  // figures of fewer events than the block it names (seen in CI: withdrawn 0 at the end of the run).
  const recordedRead = p.chain ? null : recordingRead(p, recordedWho, ledger);
  const read = p.chain ? liveRead : recordedRead;
  return (
    <section className="card span-2" aria-labelledby="wallet-h">
      <h2 id="wallet-h">Check any wallet</h2>
      <form
        className="wallet-form"
        onSubmit={(e) => {
          e.preventDefault();
          void check();
        }}
      >
        <label htmlFor="wallet-input">Address</label>
        <input
          id="wallet-input"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="0x…"
          spellCheck={false}
          autoComplete="off"
          aria-describedby="wallet-hint"
          aria-invalid={text !== "" && !valid}
          aria-keyshortcuts="/"
        />
        <button type="submit" disabled={!valid || busy}>
          {busy ? "Reading…" : "Check"}
        </button>
        <span id="wallet-hint" className={valid ? "ok" : "muted"}>
          {hint}
        </span>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {read && <WalletResult r={read} p={p} names={(a) => p.run.state.names.get(a.toLowerCase())} ledger={ledger} />}
      <p className="muted">
        The dashboard never signs: withdrawing is done by the wallet's owner with the command shown.
      </p>
    </section>
  );
}

/**
 * What the wallet field says of what is typed: how many hex characters are missing, or that 40 are there but their
 * mix of capitals is not the address's checksum (EIP-55: a mistyped character), or what an address looks like.
 */
export function addressHint(typed: string): string {
  const t = typed.trim();
  if (!typed) return "";
  const valid: boolean = isAddress(t); // (not as a type guard: t stays a string below)
  if (valid) return "a valid address";
  if (/^0x[0-9a-fA-F]{40}$/.test(t))
    return "the checksum is wrong (its capitals do not match the address): check it, or type it all in lower case";
  if (/^0x[0-9a-fA-F]{0,39}$/.test(t)) {
    const left = 42 - t.length;
    return `${left} more hex character${left === 1 ? "" : "s"}`;
  }
  return "not an address: 0x followed by 40 hex characters";
}

/** The wallet `who` from the recording's events on screen (the shared fold mutates in place, so no memo). */
function recordingRead(p: PageProps, who: string | null, ledger: Ledger | null): WalletRead | null {
  if (!who || !ledger) return null;
  const facts = walletFacts(ledger, who, namesOf(p));
  return { who, block: p.run.state.lastBlock, owed: null, stake: null, facts, source: "recording" };
}

/**
 * Names for the why-sentences, as `gpuchain wallet` gives them: the verifier Safe's owners as verifier1… (read from
 * the Safe live; a recording's own verifier names), then providers by name.
 */
function namesOf(p: PageProps, owners?: string[]): Record<string, string> {
  const verifiers = owners ? verifierNames(owners) : Object.fromEntries(p.run.state.verifiers);
  return { ...Object.fromEntries(p.run.state.names), ...verifiers };
}

function WalletResult({
  r,
  p,
  names,
}: {
  r: WalletRead;
  p: PageProps;
  names: (a: string) => string | undefined;
  ledger: Ledger | null;
}) {
  const name = names(r.who);
  const f = r.facts;
  const agree = r.owed === null || r.owed === f.withdrawable;
  // The registry's own stake (live) with the events' slashed and forfeited sums, or the events' fold alone (a
  // recording).
  const stake = r.stake
    ? { ...r.stake, slashed: f.stake?.slashed ?? 0n, forfeited: f.stake?.forfeited ?? 0n }
    : f.stake;
  const stakeAgrees = !r.stake || !f.stake || stakeSentence(f.stake) === stakeSentence(stake!);
  const shownStake = stake && (stake.deposited > 0n || stake.slashed > 0n || stake.forfeited > 0n) ? stake : null;
  return (
    <div className="wallet-result" data-testid="wallet-result" aria-live="polite">
      <h3>
        {r.who} {name && <span className="muted">({name})</span>}
      </h3>
      <dl className="kv">
        <dt>Withdrawable now</dt>
        <dd data-testid="wallet-withdrawable">{usdc(f.withdrawable)} USDC</dd>
        <dt>Withdrawn so far</dt>
        <dd data-testid="wallet-withdrawn">{usdc(f.withdrawn)} USDC</dd>
        {f.claimable.map((c) => (
          <FragmentKV key={`c${c.jobId}`} k={`Job ${c.jobId}`} v={`${usdc(c.amount)} USDC earned and claimable now`} />
        ))}
        {f.pending.map((c) => (
          <FragmentKV
            key={`p${c.jobId}`}
            k={`Job ${c.jobId}`}
            v={`${usdc(c.amount)} USDC earned, claimable once the job settles`}
          />
        ))}
        {shownStake && (
          <>
            <dt>Stake in the registry</dt>
            <dd data-testid="wallet-stake">
              {stakeSentence(shownStake)}
              {stakeAgrees ? "" : " (events and registry DISAGREE)"}
            </dd>
          </>
        )}
      </dl>
      <ul className="why" data-testid="wallet-jobs">
        {f.jobs.flatMap(jobSentences).map((line) => (
          <li key={line}>{line}</li>
        ))}
      </ul>
      <p className="proof">
        {r.source === "chain" ? (
          <>
            Read by this browser at block <b>{r.block}</b>: <code>owed({short(r.who)})</code> = {usdc(r.owed!)} USDC,
            <code>stakeOf</code>, and every escrow and registry event up to that block (<code>eth_getLogs</code>) folded
            into the books. {agree ? "Events and state agree." : "Events and state DISAGREE."}
          </>
        ) : (
          <>
            From the recording's events up to block {r.block} (the recorded chain is not running, so nothing was read
            live).
          </>
        )}
      </p>
      <details open>
        <summary>Withdraw (run by the wallet's owner)</summary>
        <pre>
          {`npx gpuchain withdraw --key YOUR_KEY_FILE --rpc ${p.config?.rpc ?? "RPC"} --deployment ` +
            `${p.config?.deploymentFile ?? "FILE"}`}
        </pre>
      </details>
    </div>
  );
}

function FragmentKV({ k, v }: { k: string; v: string }) {
  return (
    <>
      <dt>{k}</dt>
      <dd>{v}</dd>
    </>
  );
}

function Reserves(p: PageProps) {
  const live = useChainRead(p, "reserves", (chain, block) => readReserves(chain as unknown as ReservesSource, block));
  const problem = deploymentProblemOf(p.recorded, p.run.snapshot, p.config);
  const samples = p.run.state.reserves;
  const data = useMemo(() => {
    const byBlock = new Map<number, { held: number; owes: number }>();
    for (const s of samples) byBlock.set(s.block, { held: Number(s.held) / 1e6, owes: Number(s.owes) / 1e6 });
    if (live.value && live.block !== null)
      byBlock.set(live.block, { held: Number(live.value.held) / 1e6, owes: Number(live.value.owes) / 1e6 });
    const blocks = [...byBlock.keys()].sort((a, b) => a - b);
    return [
      blocks,
      blocks.map((b) => byBlock.get(b)!.held),
      blocks.map((b) => byBlock.get(b)!.owes),
    ] as uPlot.AlignedData;
  }, [samples.length, live.block]);
  const last = samples.at(-1);
  const v = live.value;
  const held = v?.held ?? (p.recorded ? last?.held : undefined);
  const owes = v?.owes ?? (p.recorded ? last?.owes : undefined);
  const block = v ? live.block : p.recorded ? last?.block : null;
  const holds = held !== undefined && owes !== undefined ? held >= owes : null;
  return (
    <section className="card" aria-labelledby="reserves-h">
      <h2 id="reserves-h">
        {p.recorded
          ? last
            ? `Proof of reserves, recorded at block ${last.block}`
            : "Proof of reserves, recorded"
          : "Proof of reserves, live"}
      </h2>
      {holds === null ? (
        <p className="muted">
          {problem
            ? `Unknown: ${chainDownWords(problem)}.`
            : p.recorded
              ? "No reserves sample in the recording up to this moment."
              : p.health.reachable === false
                ? "Unknown: the chain is not answering."
                : "Reading reserves()…"}
        </p>
      ) : (
        <>
          <p className={`verdict ${holds ? "ok" : "bad"} ${live.stale ? "stale" : ""}`} data-testid="reserves-verdict">
            {holds
              ? "The escrow holds at least what it owes"
              : "PROOF OF RESERVES FAILED: the escrow holds less than it owes"}{" "}
            at block {block}
            {live.stale ? ` (last good read; ${chainDownWords(problem)})` : ""}
          </p>
          <dl className={`kv ${live.stale ? "stale" : ""}`}>
            <dt>Held</dt>
            <dd data-testid="reserves-held">{usdc(held)} USDC</dd>
            <dt>Owed</dt>
            <dd data-testid="reserves-owed">{usdc(owes)} USDC</dd>
            {v && (
              <>
                <dt>of which</dt>
                <dd data-testid="reserves-parts">{owedParts(v, usdc)}</dd>
                <dt>Surplus</dt>
                <dd>{usdc(v.held - v.owes)} USDC</dd>
              </>
            )}
          </dl>
        </>
      )}
      {data[0].length > 1 && (
        <Chart
          label="Held versus owed by block"
          data={data}
          series={[
            { label: "held USDC", stroke: "#34d399", width: 2 },
            { label: "owed USDC", stroke: "#f472b6", width: 2, dash: [6, 4] },
          ]}
          axes={{ x: "block", y: "USDC" }}
          height={180}
        />
      )}
    </section>
  );
}

function Contracts(p: PageProps) {
  const safe = useChainRead(p, "safe", async ({ safe }, block) => {
    const at = { blockTag: block };
    const [owners, threshold] = await Promise.all([safe.getOwners(at), safe.getThreshold(at)]);
    return { owners: [...owners] as string[], threshold: Number(threshold) };
  });
  const d = p.config?.deployment;
  const problem = deploymentProblemOf(p.recorded, p.run.snapshot, p.config);
  const link = (a: string) =>
    p.config?.explorer ? <a href={`${p.config.explorer}/address/${a}`}>{a}</a> : <code>{a}</code>;
  return (
    <section className="card span-all" aria-labelledby="contracts-h">
      <h2 id="contracts-h">Contracts</h2>
      {!d ? (
        <p className="muted">Unknown until the dashboard server answers.</p>
      ) : (
        <dl className="kv contracts">
          <dt>Escrow (JobEscrow)</dt>
          <dd>{link(d.escrow)}</dd>
          <dt>Registry (ProviderRegistry)</dt>
          <dd>{link(d.registry)}</dd>
          <dt>Token (test USDC)</dt>
          <dd>{link(d.usdc)}</dd>
          <dt>Verifier Safe</dt>
          <dd>
            {link(d.verifierSafe)}
            <div data-testid="safe-owners" className={safe.stale ? "stale" : ""}>
              {safe.value
                ? `${safe.value.threshold} of ${safe.value.owners.length} owners must sign (block ${safe.block}): ` +
                  safe.value.owners
                    .map((o) => `${p.run.state.verifiers.get(o.toLowerCase()) ?? ""} ${o}`.trim())
                    .join(", ")
                : p.recorded
                  ? "2 of 3 owners (recorded run: not read live)"
                  : problem
                    ? `unknown: ${chainDownWords(problem)}`
                    : "reading getOwners() and getThreshold()…"}
            </div>
          </dd>
        </dl>
      )}
    </section>
  );
}

function CheckYourself(p: PageProps) {
  const c = p.config;
  const rpc = c?.rpc ?? "RPC";
  const escrow = c?.deployment.escrow ?? "ESCROW";
  return (
    <section className="card span-all" aria-labelledby="check-h">
      <h2 id="check-h">Check it yourself</h2>
      <pre>{`# held vs owed (proof of reserves)
cast call ${escrow} "reserves()(uint256,uint256)" --rpc-url ${rpc}
npx gpuchain reserves --rpc ${rpc} --deployment ${c?.deploymentFile ?? "FILE"}
# what an address is owed, per job, and why
npx gpuchain wallet 0xADDRESS --rpc ${rpc} --deployment ${c?.deploymentFile ?? "FILE"}
# the same read with ethers
node -e 'const e = require("ethers"); const abi = ["function owed(address) view returns (uint256)"];
  new e.Contract("${escrow}", abi, new e.JsonRpcProvider("${rpc}")).owed("0xADDRESS").then(console.log)'`}</pre>
    </section>
  );
}
