import type { PageProps } from "../context.ts";
import { formatTime } from "../../../sdk/format.ts";
import { coordinatorUp, useNow } from "./TopBar.tsx";

/** "Coordinator offline" and "Chain unreachable", with the actions the help page names. */
export function Banners(p: PageProps) {
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
  if (!p.recorded && p.health.reachable === false) {
    const wait = p.health.retryAt ? Math.max(0, Math.ceil((p.health.retryAt - now) / 1000)) : null;
    out.push(
      <div className="banner banner-warn" role="alert" key="chain">
        <strong>Chain unreachable</strong>
        <span>
          {p.health.error ?? "the RPC is limiting requests or down"}. On-chain values keep their last good value
          {p.health.head !== null ? ` (block ${p.health.head})` : ""}.
          {wait !== null ? ` Reading again in ${wait} s.` : ""}
        </span>
        <span className="actions">
          <button onClick={() => p.chain?.readAgain()}>Read again</button>
        </span>
      </div>,
    );
  }
  return out.length ? <div className="banners">{out}</div> : null;
}
