/**
 * Stake, slashing and probation, short (the rules of contracts/JobEscrow.sol and ProviderRegistry.sol; docs/THREATS.md
 * has the why).
 */
const STAKE: [string, string][] = [
  [
    "Stake",
    "gpuchain provide deposits test USDC in the provider registry (5 × its minimum). Each job you hold locks part " +
      "of it: your price × the job's checkpoint interval, at least the minimum. Stake you ask back is " +
      "withdrawable after the registry's unbonding delay.",
  ],
  [
    "Probation",
    "Until your first accepted checkpoint. If a hold ends without an accepted checkpoint by your failure (lease " +
      "lapsed, checkpoint refused, or no progress for the job's progress timeout), its lock goes to the job's " +
      "client. A report the verifiers leave undecided never costs it. Your first accepted checkpoint ends " +
      "probation for good: after that an honest crash costs only the unaccepted work.",
  ],
  [
    "Slashing",
    "A fault the verifiers prove and sign (your committed work does not replay) takes that job's lock, split " +
      "between the client, the verifier who found it and the network fee, and voids your unclaimed earnings on " +
      "the job. On probation or not.",
  ],
];

/**
 * Help: the reference help page's questions, badges, words and troubleshooting, answered for what GPUChain
 * actually is (a local or Base Sepolia deployment, Node.js agents, onnxruntime training).
 */
import { BADGE_MEANING } from "../badges.ts";
import { DEVICE_CHOICE, GPU_NOT_PROVEN } from "../model/deviceChoice.ts";
import type { PageProps } from "../context.ts";
import { ShortcutList } from "../components/ShortcutsOverlay.tsx";
import { KEEPERS_GRACE_MS } from "../sources/config.ts";

const QA: [string, string][] = [
  [
    "What is GPUChain, in one line?",
    "A network where a training job survives its provider dying, bad results get refused, and an escrow " +
      "contract pays each provider only for the work that made it into the final model.",
  ],
  [
    "Why does it need a blockchain?",
    "A client and a provider who don't know each other need someone neutral to hold the money and follow the " +
      "agreed rules. The escrow contract is that party: the budget is locked before work starts, and it " +
      "pays out only with the signatures of 2 of the 3 verifiers, checked by their Safe. You can check all " +
      "of it yourself on the On-chain page. It doesn't make the computing itself trustworthy; that is what " +
      "the Quality Guard's replays and evaluations are for.",
  ],
  [
    "Is this real money?",
    "No. It runs on a local chain started by npm start, or on Base Sepolia (a test network), with test USDC " +
      "that has no value. Never send real funds.",
  ],
  [
    "How do I rent out my device?",
    "Open Provide compute, set a name and a price per step, and copy the one command it shows. It creates a " +
      `provider key on your machine, ${DEVICE_CHOICE}, registers the offer on chain and starts taking work. ` +
      "A provider training on a GPU reports it to the registry and shows the Real GPU badge. " +
      GPU_NOT_PROVEN,
  ],
  [
    "How do I get paid?",
    "Each accepted checkpoint credits (steps × your price) to you in the escrow. After the job settles (or is " +
      "cancelled) the credit is released to your wallet's balance; run npx gpuchain withdraw --key " +
      "YOUR_KEY_FILE whenever you like (it claims and calls withdraw()). Type your address into Check any " +
      "wallet on the On-chain page to see what you're owed and why.",
  ],
  [
    "What happens if my device drops out halfway?",
    "The coordinator notices the missing heartbeats (5 s) and unassigns you, which bumps the job's epoch so your " +
      "old worker can no longer write (if the coordinator is down, the on-chain lease lapses instead). The job " +
      "moves on from the last accepted checkpoint; you keep what your accepted steps earned. What else it costs " +
      "depends on probation (below).",
  ],
  [
    "Why did a provider earn nothing?",
    "Either its checkpoint was refused by the Quality Guard (hash, NaN/Inf, an exact replay of sampled steps, " +
      "held-out evaluation), or it never reported a checkpoint that was accepted. Only accepted steps are " +
      "paid.",
  ],
  [
    "What if I disagree with a payout?",
    "The client can dispute during the dispute window by posting a bond. The arbiter decides. If the arbiter " +
      "stays silent for 3 days, the verdict stands and the bond is returned; a rejected dispute forfeits " +
      "the bond to the fee recipient.",
  ],
  [
    "Can I run my own training code?",
    "Not yet. Only approved workload templates run today (mnist-mlp, the convolutional mnist-cnn, the character-level char-transformer on Moby-Dick and the small blobs-tiny), to protect " +
      "providers' machines.",
  ],
];

const WORDS: [string, string][] = [
  ["Escrow", "The contract that holds a job's budget until the verdict decides who gets what."],
  [
    "Verifier",
    "An independent process that checks each checkpoint and signs the decision. 2 of 3 must agree (a Safe multisig).",
  ],
  [
    "Checkpoint",
    "A saved copy of the training state, content-addressed by its hash. A job resumes from the last accepted one.",
  ],
  [
    "Logical step",
    "One unit of training that means the same on every device, however it's split into smaller batches.",
  ],
  [
    "Fencing token",
    "The job's epoch: a counter that stops an old, disconnected worker from writing after the job moved on.",
  ],
  ["Dispute window", "The time after a verdict when the client can still challenge it."],
  ["Proof of reserves", "A check, read from the chain, that the escrow holds at least as much USDC as it owes."],
];

export function HelpPage(_p: PageProps) {
  return (
    <div className="help">
      <p className="lede">Answers to the common questions, what each badge means, and the words we use.</p>
      <section aria-labelledby="q-h">
        <h2 id="q-h">Questions</h2>
        {QA.map(([q, a]) => (
          <details key={q} open>
            <summary>{q}</summary>
            <p>{a}</p>
          </details>
        ))}
      </section>
      <section aria-labelledby="s-h" data-testid="help-stake">
        <h2 id="s-h">Stake, probation and slashing</h2>
        <Terms entries={STAKE} />
      </section>
      <section aria-labelledby="b-h">
        <h2 id="b-h">What the badges mean</h2>
        <p className="muted">A badge is shown only when it is true of what is on screen.</p>
        <dl className="kv">
          {Object.entries(BADGE_MEANING).map(([b, m]) => (
            <div key={b}>
              <dt>{b}</dt>
              <dd>
                {m}
                {b === "Real GPU" && " Shown only for a provider whose agent reported a GPU to the registry."}
                {b === "Real, separate machine" &&
                  " Shown only for a provider that reported a GPU to the registry and whose signed heartbeats name " +
                    "another machine than the one this dashboard's server runs on; it needs a coordinator that " +
                    "lists each beat's machine identity (GET /heartbeats), and is never shown without one."}
              </dd>
            </div>
          ))}
        </dl>
      </section>
      <section aria-labelledby="w-h">
        <h2 id="w-h">Words we use</h2>
        <Terms entries={WORDS} />
      </section>
      <section aria-labelledby="t-h">
        <h2 id="t-h">Something isn't working</h2>
        <ul>
          <li>
            <b>"Coordinator offline"</b>: the scheduling server (the coordinator keeper, or this dashboard's server)
            stopped answering, or never answered in the first {KEEPERS_GRACE_MS / 1000} s after the dashboard started
            (until then the top bar says <i>coordinator: starting</i>). Switch to the recorded run from the top bar, or
            check Status. The page reconnects by itself; the values shown are the last ones it gave.
          </li>
          <li>
            <b>"Chain unreachable"</b>: the RPC is limiting requests (HTTP 429, common on the public Base Sepolia RPC)
            or is down. The banner says what was asked of which URL and asks again by itself (or press Read again);
            on-chain values keep their last good value and its block meanwhile.
          </li>
          <li>
            <b>"Deployment file is stale"</b>: the chain answers, but there is no contract code at the addresses in the
            deployment file (the chain was restarted since it was deployed). The banner gives the command to deploy
            again; the dashboard reads the file again by itself and follows the new deployment without a restart.
          </li>
          <li>
            <b>A provider command fails</b>: it needs Node.js 20 or later and this repository installed (
            <code>ONNXRUNTIME_NODE_INSTALL=skip npx -y -p node@22 -- npm ci</code>; onnxruntime-node comes with it, no
            Python), the RPC and coordinator addresses reachable, and test ETH for gas on its key. The page shows the
            exact command for this network.
          </li>
          <li>
            <b>Keyboard shortcuts</b>: press <kbd>?</kbd> on the dashboard to see them.
          </li>
        </ul>
      </section>
      <section aria-labelledby="k-h">
        <h2 id="k-h">Shortcuts</h2>
        <ShortcutList className="kv" />
      </section>
    </div>
  );
}

/** A list of terms and their meanings (stake rules, the words we use). */
function Terms({ entries }: { entries: readonly (readonly [string, string])[] }) {
  return (
    <dl className="kv">
      {entries.map(([w, m]) => (
        <div key={w}>
          <dt>{w}</dt>
          <dd>{m}</dd>
        </div>
      ))}
    </dl>
  );
}
