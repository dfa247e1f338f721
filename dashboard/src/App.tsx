/** The frame of every page: top bar, badges, error banners, playback bar, navigation, shortcuts overlay. */
import { useEffect, useMemo, useRef, useState } from "react";
import { Badges } from "./components/Badges.tsx";
import { Banners } from "./components/Banners.tsx";
import { PlaybackBar } from "./components/PlaybackBar.tsx";
import { ShortcutsOverlay } from "./components/ShortcutsOverlay.tsx";
import { TopBar } from "./components/TopBar.tsx";
import type { PageProps } from "./context.ts";
import { useChainHealth } from "./hooks.ts";
import { keyAction } from "./keyboard.ts";
import { configBehind } from "./model/deploymentProblem.ts";
import { HelpPage } from "./pages/Help.tsx";
import { OnChainPage } from "./pages/OnChain.tsx";
import { ProvidePage } from "./pages/Provide.tsx";
import { RecordedPage } from "./pages/Recorded.tsx";
import { StatusPage } from "./pages/Status.tsx";
import { SPEEDS, useRun } from "./run.ts";
import { nextDelay } from "./sources/backoff.ts";
import { ChainReader, type ChainHealth } from "./sources/chain.ts";
import { chainAnswered, loadConfig, type DashboardConfig } from "./sources/config.ts";
import { PAGES, readView, writeView, type View } from "./url.ts";

export function App() {
  const [view, setView] = useState<View>(readView);
  const [config, setConfig] = useState<DashboardConfig | null>(null);
  const [configError, setConfigError] = useState(false);
  const [overlay, setOverlay] = useState(false);
  const viewRef = useRef(view);
  viewRef.current = view;

  useEffect(() => {
    let stop = false;
    let delay = 1000;
    const attempt = async () => {
      const c = await loadConfig();
      if (stop) return;
      if (c) {
        setConfig(c);
        setConfigError(false);
      } else {
        setConfigError(true);
        setTimeout(attempt, (delay = Math.min(delay * 2, 15_000)));
      }
    };
    void attempt();
    const onPop = () => setView(readView());
    addEventListener("popstate", onPop);
    return () => {
      stop = true;
      removeEventListener("popstate", onPop);
    };
  }, []);

  const go = (patch: Partial<View>) => {
    const next = { ...viewRef.current, ...patch };
    if (patch.run !== undefined && patch.t === undefined) next.t = null;
    const push = patch.page !== undefined || patch.run !== undefined;
    writeView(next, push);
    setView(next);
  };

  const recorded = view.run !== null;
  const chain = useMemo(
    () => (config && !recorded && chainAnswered(config) ? new ChainReader(config) : null),
    [config, recorded],
  );
  useEffect(() => () => chain?.stop(), [chain]);
  const readerHealth = useChainHealth(chain);

  // A chain that has not answered the server yet (its config says chain id "unknown"): no reader can start, so the
  // page says "Chain unreachable" with what was asked, and asks the server again with backoff until it answers
  // (the server itself asks the chain every second).
  const unanswered = !recorded && config !== null && !chainAnswered(config);
  const [configRetryAt, setConfigRetryAt] = useState<number | null>(null);
  const [askNow, setAskNow] = useState(0);
  useEffect(() => {
    if (!unanswered) return;
    let stop = false;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = async () => {
      const c = await loadConfig();
      if (stop) return;
      if (c && chainAnswered(c)) {
        setConfigRetryAt(null);
        setConfig(c);
        return;
      }
      if (c) setConfig(c); // still unanswered: the recordings and the rest may have changed
      schedule();
    };
    const schedule = () => {
      const wait = nextDelay(++failures, 2000, 15_000);
      setConfigRetryAt(Date.now() + wait);
      timer = setTimeout(() => void ask(), wait);
    };
    if (askNow > 0) void ask();
    else schedule();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [unanswered, askNow]);
  const health = useMemo<ChainHealth>(
    () =>
      unanswered
        ? {
            reachable: false,
            head: null,
            headAt: null,
            error: "the RPC did not answer",
            tried: `eth_chainId from this dashboard's server to ${config!.rpc} (it asks every second)`,
            retryAt: configRetryAt ?? undefined,
          }
        : readerHealth,
    [unanswered, config?.rpc, configRetryAt, readerHealth],
  );
  const run = useRun(view.run, view.t, (t) => {
    const next = { ...viewRef.current, t };
    writeView(next, false);
    viewRef.current = next;
  });

  // The server's deployment changed (stale, fixed by a redeploy, new addresses) or its chain answered since the
  // config was read: read it again (at most every 2 s), so the page follows without a reload.
  const configAskedAt = useRef(0);
  useEffect(() => {
    if (recorded || !configBehind(config, run.snapshot)) return;
    if (Date.now() - configAskedAt.current < 2000) return;
    configAskedAt.current = Date.now();
    void loadConfig().then((c) => c && setConfig(c));
  }, [config, run.snapshot, recorded]);

  // Keyboard shortcuts (ignored while typing).
  const prevKey = useRef<{ key: string; at: number } | null>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const prev = prevKey.current && Date.now() - prevKey.current.at < 1500 ? prevKey.current.key : null;
      const a = keyAction(e, prev, PAGES);
      prevKey.current = { key: e.key, at: Date.now() };
      if (!a) return;
      const playback = run.playback;
      if (a.kind === "help") setOverlay((o) => !o);
      else if (a.kind === "close") setOverlay(false);
      else if (a.kind === "page") go({ page: a.page as View["page"] });
      else if (a.kind === "wallet") {
        go({ page: "onchain" });
        setTimeout(() => document.getElementById("wallet-input")?.focus(), 0);
      } else if (a.kind === "live") go({ run: viewRef.current.run ? null : (config?.recordings[0]?.name ?? null) });
      else if (!playback) return;
      else if (a.kind === "play") run.control.toggle();
      else if (a.kind === "seek") run.control.seek(playback.t + a.by);
      else if (a.kind === "seekTo") run.control.seek(a.to === "start" ? 0 : playback.durationMs);
      else if (a.kind === "speed") {
        const i = SPEEDS.indexOf(playback.speed);
        run.control.speed(SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, (i < 0 ? 3 : i) + a.by))]);
      } else return;
      e.preventDefault();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  });

  const props: PageProps = { run, config, chain, health, recorded, view, go };
  const page = {
    status: StatusPage,
    provide: ProvidePage,
    onchain: OnChainPage,
    help: HelpPage,
    recorded: RecordedPage,
  }[view.page];
  const Page = page;
  const title = PAGES.find((p) => p.id === view.page)!.title;
  useEffect(() => {
    document.title = `${title} · GPUChain${recorded ? " (recorded)" : ""}`;
  }, [title, recorded]);

  // The pages re-render when their data changes, not on every playback clock tick (the bar has its own).
  const pageElement = useMemo(
    () => <Page {...props} />,
    [
      Page,
      run.version,
      run.snapshot,
      run.stream,
      run.snapshotError,
      view.job,
      view.provider,
      health,
      config,
      recorded,
      chain,
    ],
  );
  const runBadges = [...(recorded ? ["Recorded"] : []), ...pageBadges(props)];
  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <TopBar {...props} onHelp={() => setOverlay((o) => !o)} configError={configError} />
      <nav className="tabs" aria-label="Pages">
        {PAGES.map((p) => (
          <a
            key={p.id}
            href={`?page=${p.id}${view.run ? `&run=${encodeURIComponent(view.run)}` : ""}`}
            aria-current={view.page === p.id ? "page" : undefined}
            onClick={(e) => {
              e.preventDefault();
              go({ page: p.id });
            }}
          >
            {p.title} <kbd aria-hidden="true">{p.key}</kbd>
          </a>
        ))}
      </nav>
      <Banners {...props} readAgain={() => setAskNow((n) => n + 1)} />
      {run.playback && <PlaybackBar playback={run.playback} control={run.control} />}
      <main id="main" tabIndex={-1}>
        <div className="page-head">
          <h1>{title}</h1>
          <Badges names={runBadges} />
        </div>
        {pageElement}
      </main>
      {overlay && <ShortcutsOverlay onClose={() => setOverlay(false)} />}
    </div>
  );
}

/** Run-level badges that are true of what is on screen. */
function pageBadges(p: PageProps): string[] {
  const out: string[] = [];
  const chainId = p.config?.chainId;
  if (p.run.state.badges.includes("Local chain") || (!p.recorded && chainId === "31337")) out.push("Local chain");
  for (const b of p.run.state.badges) if (b !== "Local chain" && b !== "Public test network") out.push(b);
  for (const prov of p.run.state.providers.values()) for (const b of prov.badges) out.push(b);
  return [...new Set(out)];
}
