import type { PageProps } from "../context.ts";
import { formatTime } from "../../../sdk/words/format.ts";
import { deploymentProblemOf, deploymentProblemTitle } from "../model/deploymentProblem.ts";
import { coordinatorUp, useNow } from "./TopBar.tsx";

/**
 * "Coordinator offline" and "Chain unreachable", with the actions the help page names; a chain that answers while
 * the deployment file is stale gets that said instead (the page's failed reads are the missing contracts).
 */
export function Banners(p: PageProps & { readAgain?(): void }) {
  const now = useNow(1000);
  const out = [];
  if (!p.recorded && coordinatorUp(p) === false) {
    const last = p.run.snapshot?.coordinator.lastOkAt;
    out.push(
      <div className="banner banner-bad" role="alert" key="coord">
        <strong>Coordinator offline</strong>
        <span>
          The scheduling server isn't reachable{last ? `; last heard at ${formatTime(new Date(last))}` : ""}.
          Reconnecting by itself with backoff; the values below are the last ones it gave.
        </span>
        <span className="actions">
          <button onClick={() => p.go({ run: p.config?.recordings[0]?.name ?? "sample.jsonl" })}>
            Switch to the recorded run
          </button>
          <button onClick={() => p.go({ page: "status" })}>Open Status</button>
        </span>
      </div>,
    );
  }
  const problem = deploymentProblemOf(p.recorded, p.run.snapshot, p.config);
  if (problem) {
    out.push(
      <div className="banner banner-warn" role="alert" key="deployment" data-testid="deployment-problem">
        <strong>{deploymentProblemTitle(problem)}</strong>
        <span>
          The chain at {p.config?.rpc ?? "the RPC"} answers, but {problem}. This page checks again by itself and reads
          the contracts once they are there.
        </span>
      </div>,
    );
  } else if (!p.recorded && p.health.reachable === false) {
    const wait = p.health.retryAt ? Math.max(0, Math.ceil((p.health.retryAt - now) / 1000)) : null;
    out.push(
      <div className="banner banner-warn" role="alert" key="chain" data-testid="chain-unreachable">
        <strong>Chain unreachable</strong>
        <span>
          {p.health.error ?? "the RPC is limiting requests or down"}.
          {p.health.head !== null
            ? ` On-chain values keep their last good value (block ${p.health.head}).`
            : " Nothing has been read from it yet."}
          {p.health.tried ? ` Tried: ${p.health.tried}.` : ""}
          {wait !== null ? ` Asking again in ${wait} s.` : " Asking again by itself."}
        </span>
        <span className="actions">
          <button onClick={() => (p.chain ? p.chain.readAgain() : p.readAgain?.())}>Read again</button>
        </span>
      </div>,
    );
  }
  return out.length ? <div className="banners">{out}</div> : null;
}
