/**
 * The run on screen: live (the server's stream) or recorded (a recording played back with a clock). Both feed
 * entries to the same fold; the views re-render at most once per animation frame, so fast playback stays smooth.
 */
import { useEffect, useRef, useState } from "react";
import { parseRecording, recordingStart, rolledBack, type Entry, type ReorgNote } from "../../sdk/run/recording.ts";
import { applyEntry, emptyState, foldAll, type RunState } from "./model/state.ts";
import { connectLive, type Snapshot } from "./sources/live.ts";

export interface Playback {
  name: string;
  date: string;
  durationMs: number;
  t: number;
  playing: boolean;
  speed: number;
  markers: { ms: number; kind: string; label: string }[];
  /** The run-level badges of the whole recording (what it was: Local chain, …); undefined until it is loaded. */
  runBadges?: string[];
  error?: string;
}

export interface Run {
  state: RunState;
  version: number;
  stream: boolean | null; // live stream up? null before the first answer
  snapshot: Snapshot | null;
  snapshotAt: number | null;
  snapshotError?: string;
  playback?: Playback;
  control: {
    play(): void;
    pause(): void;
    toggle(): void;
    seek(ms: number): void;
    speed(s: number): void;
  };
}

export const SPEEDS = [1, 2, 4, 8, 16, 32];

/**
 * A version counter bumped at most once per `minMs` (and per animation frame): many entries in a burst, or fast
 * playback, cost one render of the pages, not one per entry.
 */
function useThrottledTick(minMs: number): [number, () => void] {
  const [version, setVersion] = useState(0);
  const pending = useRef(false);
  const last = useRef(0);
  const bump = () => {
    if (pending.current) return;
    pending.current = true;
    const wait = Math.max(0, last.current + minMs - performance.now());
    setTimeout(() => {
      requestAnimationFrame(() => {
        pending.current = false;
        last.current = performance.now();
        setVersion((v) => v + 1);
      });
    }, wait);
  };
  return [version, bump];
}

export function useRun(recording: string | null, initialT: number | null, onTime: (t: number) => void): Run {
  const stateRef = useRef<RunState>(emptyState());
  const [version, bump] = useThrottledTick(recording ? 250 : 100);
  const [stream, setStream] = useState<boolean | null>(null);
  const [snapshot, setSnapshot] = useState<Snapshot | null>(null);
  const [snapshotAt, setSnapshotAt] = useState<number | null>(null);
  const [snapshotError, setSnapshotError] = useState<string | undefined>();
  const [playback, setPlayback] = useState<Playback | undefined>();
  const entriesRef = useRef<Entry[]>([]);
  const cursor = useRef(0);
  const clock = useRef({ t: 0, playing: false, speed: 8, startedAt: 0, startT: 0 });

  // Live: the stream and the snapshot.
  useEffect(() => {
    if (recording) return;
    stateRef.current = emptyState();
    bump();
    // What the stream sent, so a reorganisation (a "reorg" metric) folds the history again without the replaced blocks.
    let live: Entry[] = [];
    return connectLive({
      onReset: () => {
        stateRef.current = emptyState();
        live = [];
      },
      onEntry: (e) => {
        if (e.kind === "metric" && e.source === "reorg") {
          live = [...rolledBack(live, Number((e.data as ReorgNote).from)), e];
          stateRef.current = foldAll(live);
        } else {
          live.push(e);
          applyEntry(stateRef.current, e);
        }
        bump();
      },
      onStream: (up) => setStream(up),
      onSnapshot: (s, error) => {
        if (s) {
          setSnapshot(s);
          setSnapshotAt(Date.now());
          setSnapshotError(undefined);
        } else setSnapshotError(error);
      },
    });
  }, [recording]);

  // Recorded: fetch, then play with a clock.
  useEffect(() => {
    if (!recording) {
      setPlayback(undefined);
      return;
    }
    let cancelled = false;
    let raf = 0;
    stateRef.current = emptyState();
    entriesRef.current = [];
    cursor.current = 0;
    setPlayback({
      name: recording,
      date: "",
      durationMs: 0,
      t: 0,
      playing: false,
      speed: clock.current.speed,
      markers: [],
    });
    void (async () => {
      try {
        const res = await fetch(`api/recordings/${encodeURIComponent(recording)}`);
        if (!res.ok) throw new Error(`${res.status} ${(await res.text()).slice(0, 200)}`);
        const { entries } = parseRecording(await res.text());
        if (cancelled) return;
        entriesRef.current = entries;
        const full = foldAll(entries);
        const durationMs = entries.length ? entries[entries.length - 1].ms : 0;
        const date = recordingStart(entries);
        const t = Math.min(initialT ?? 0, durationMs);
        clock.current = { ...clock.current, t, playing: initialT === null, startedAt: performance.now(), startT: t };
        seekTo(t);
        setPlayback({
          name: recording,
          date,
          durationMs,
          t,
          playing: clock.current.playing,
          speed: clock.current.speed,
          markers: full.markers,
          runBadges: full.badges,
        });
        const loop = () => {
          if (cancelled) return;
          const c = clock.current;
          if (c.playing) {
            const t2 = Math.min(durationMs, c.startT + (performance.now() - c.startedAt) * c.speed);
            advanceTo(t2);
            if (t2 >= durationMs) c.playing = false;
            setPlayback((p) => (p ? { ...p, t: c.t, playing: c.playing } : p));
          }
          raf = requestAnimationFrame(loop);
        };
        raf = requestAnimationFrame(loop);
      } catch (err) {
        if (!cancelled) setPlayback((p) => (p ? { ...p, error: (err as Error).message } : p));
      }
    })();
    return () => {
      cancelled = true;
      cancelAnimationFrame(raf);
    };
  }, [recording]);

  const advanceTo = (t: number) => {
    const entries = entriesRef.current;
    let changed = false;
    while (cursor.current < entries.length && entries[cursor.current].ms <= t) {
      const e = entries[cursor.current++];
      // A reorganisation in the recording: fold what came before it again, without the replaced blocks.
      if (e.kind === "metric" && e.source === "reorg") stateRef.current = foldAll(entries.slice(0, cursor.current));
      else applyEntry(stateRef.current, e);
      changed = true;
    }
    clock.current.t = t;
    if (changed) bump();
  };
  const seekTo = (t: number) => {
    if (t < clock.current.t || cursor.current === 0) {
      stateRef.current = emptyState();
      cursor.current = 0;
    }
    advanceTo(t);
    bump();
  };

  // Keep the playback time in the URL (by whole seconds). Fast playback passes many seconds per real second, and
  // each history.replaceState costs milliseconds: while playing, the URL follows at most once per real second.
  const lastReported = useRef({ sec: -1, at: -Infinity });
  useEffect(() => {
    if (!playback) return;
    const sec = Math.floor(playback.t / 1000);
    const now = performance.now();
    if (sec === lastReported.current.sec || (playback.playing && now - lastReported.current.at < 1000)) return;
    lastReported.current = { sec, at: now };
    onTime(playback.t);
  }, [playback?.t, playback?.playing]);

  const restart = (t: number, playing: boolean) => {
    clock.current = { ...clock.current, t, startT: t, startedAt: performance.now(), playing };
    setPlayback((p) => (p ? { ...p, t, playing } : p));
  };
  const control = {
    play: () => {
      const dur = playback?.durationMs ?? 0;
      const t = clock.current.t >= dur ? 0 : clock.current.t;
      if (t === 0) seekTo(0);
      restart(t, true);
    },
    pause: () => restart(clock.current.t, false),
    toggle: () => (clock.current.playing ? control.pause() : control.play()),
    seek: (ms: number) => {
      const t = Math.max(0, Math.min(playback?.durationMs ?? 0, ms));
      seekTo(t);
      restart(t, clock.current.playing);
    },
    speed: (s: number) => {
      clock.current = { ...clock.current, speed: s, startT: clock.current.t, startedAt: performance.now() };
      setPlayback((p) => (p ? { ...p, speed: s } : p));
    },
  };

  return { state: stateRef.current, version, stream, snapshot, snapshotAt, snapshotError, playback, control };
}
