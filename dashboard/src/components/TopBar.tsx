import { useEffect, useState } from "react";
import type { PageProps } from "../context.ts";
import { ago } from "../format.ts";

/** Product name · Live / Recorded run · chain chip · freshness · coordinator dot · `?`. */
export function TopBar(p: PageProps & { onHelp(): void; configError: boolean }) {
  const now = useNow(1000);
  const { config, health, run, recorded } = p;
  const recordedChain = run.state.badges.includes("Local chain") ? "Local chain · 31337" : "Public test network";
  const chainLabel = recorded
    ? `${recordedChain} (recorded)`
    : config
      ? `${config.chainName} · ${config.chainId}`
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
  const coordUp = coordinatorUp(p);
  const coordText = recorded
    ? "coordinator: recorded"
    : coordUp === null
      ? "coordinator: checking"
      : coordUp
        ? "coordinator online"
        : "coordinator offline";
  return (
    <header className="topbar">
      <div className="brand">
        <span className="logo" aria-hidden="true" />
        GPUChain
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
      <span className="chip" title="the chain this network settles on">
        {chainLabel}
      </span>
      <span className={`chip fresh tone-${fresh.tone}`} role="status" aria-label={`freshness: ${fresh.text}`}>
        <span className="dot" aria-hidden="true" />
        {fresh.text}
      </span>
      <span
        className={`chip tone-${recorded ? "neutral" : coordUp ? "good" : coordUp === null ? "neutral" : "bad"}`}
        aria-label={coordText}
      >
        <span className="dot" aria-hidden="true" />
        {coordText}
      </span>
      <button className="help-btn" onClick={p.onHelp} aria-label="Keyboard shortcuts (?)" aria-keyshortcuts="?">
        ?
      </button>
    </header>
  );
}

export function coordinatorUp(p: PageProps): boolean | null {
  if (p.recorded) return null;
  if (p.run.snapshotError) return false;
  if (!p.run.snapshot) return null;
  return p.run.snapshot.coordinator.reachable;
}

export function useNow(periodMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), periodMs);
    return () => clearInterval(t);
  }, [periodMs]);
  return now;
}
