import { useEffect, useState } from "react";
import type { PageProps } from "../context.ts";
import { ago } from "../format.ts";
import { chainAnswered, coordinatorState, KEEPERS_GRACE_MS, type CoordinatorState } from "../sources/config.ts";

/**
 * Product name · Live / Recorded run · chain chip · freshness · coordinator dot · `?`. On a phone the bar stays one
 * row: the product name and the chain chip are kept for screen readers only, the coordinator is its dot.
 */
export function TopBar(p: PageProps & { onHelp(): void; configError: boolean }) {
  const now = useNow(1000);
  const { config, health, run, recorded } = p;
  const chainLabel = recorded
    ? recordedChainLabel(p)
    : chainAnswered(config)
      ? `${config!.chainName} · ${config!.chainId}`
      : config
        ? "network unknown (chain not answering)"
        : "network unknown";
  let fresh: { text: string; tone: string };
  if (recorded) fresh = { text: `block ${run.state.lastBlock || "—"} · recorded`, tone: "neutral" };
  else if (health.head === null)
    fresh = {
      text: health.reachable === false ? "chain unreachable" : "reading the chain…",
      tone: health.reachable === false ? "bad" : "neutral",
    };
  else {
    const age = now - (health.headAt ?? now);
    const tone = health.reachable === false ? "bad" : age > 15_000 ? "bad" : age > 6_000 ? "warn" : "good";
    fresh = { text: `block ${health.head} · ${ago(age)}`, tone };
  }
  const coord = coordinatorOf(p);
  const coordText = COORDINATOR_WORDS[coord];
  const coordTone = coord === "online" ? "good" : coord === "offline" ? "bad" : "neutral";
  return (
    <header className="topbar">
      <div className="brand">
        <span className="logo" aria-hidden="true" />
        <span className="brand-name">GPUChain</span>
      </div>
      <label className="run-select">
        <span className="sr-only">Run</span>
        <select
          aria-label="Live or recorded run"
          value={p.view.run ?? ""}
          onChange={(e) => p.go({ run: e.target.value || null })}
        >
          <option value="">Live</option>
          {[
            ...(config?.recordings ?? []),
            ...(p.view.run && !config?.recordings.some((r) => r.name === p.view.run) ? [{ name: p.view.run }] : []),
          ].map((r) => (
            <option key={r.name} value={r.name}>
              Recorded run: {r.name}
            </option>
          ))}
        </select>
      </label>
      <span className="chip chain-chip" title="the chain this network settles on" data-testid="chain-chip">
        {chainLabel}
      </span>
      <span
        className={`chip fresh tone-${fresh.tone}`}
        role="status"
        aria-label={`freshness: ${fresh.text}`}
        title={`${chainLabel}: ${fresh.text}`}
      >
        <span className="dot" aria-hidden="true" />
        {fresh.text}
      </span>
      <span
        className={`chip coord tone-${coordTone}`}
        aria-label={coordText}
        title={
          coord === "starting"
            ? `${coordText}: not answering yet; called offline if it has not answered ${KEEPERS_GRACE_MS / 1000} s ` +
              "after the dashboard started"
            : coordText
        }
        data-testid="coordinator-chip"
      >
        <span className="dot" aria-hidden="true" />
        <span className="coord-text">{coordText}</span>
      </span>
      <button className="help-btn" onClick={p.onHelp} aria-label="Keyboard shortcuts (?)" aria-keyshortcuts="?">
        ?
      </button>
    </header>
  );
}

const COORDINATOR_WORDS: Record<CoordinatorState, string> = {
  recorded: "coordinator: recorded",
  checking: "coordinator: checking",
  starting: "coordinator: starting",
  online: "coordinator online",
  offline: "coordinator offline",
};

/**
 * The chain a recording was made on, from the whole recording (its "Local chain" badge comes seconds into the run,
 * so the state at the playback time cannot say it); a recording that names no chain says so.
 */
function recordedChainLabel(p: PageProps): string {
  const badges = p.run.playback?.runBadges;
  if (!badges) return "recording loading…";
  if (badges.includes("Local chain")) return "Local chain · 31337 (recorded)";
  return "recorded chain (not named in the recording)";
}

export function coordinatorOf(p: PageProps): CoordinatorState {
  return coordinatorState({
    recorded: p.recorded,
    snapshotError: p.run.snapshotError,
    snapshot: p.run.snapshot,
    serverStartedAt: p.config?.serverStartedAt,
  });
}

/** Whether the coordinator answers (null: recorded, not asked yet, or still starting). */
export function coordinatorUp(p: PageProps): boolean | null {
  const s = coordinatorOf(p);
  return s === "online" ? true : s === "offline" ? false : null;
}

export function useNow(periodMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), periodMs);
    return () => clearInterval(t);
  }, [periodMs]);
  return now;
}
