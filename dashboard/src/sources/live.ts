/**
 * The live run: the dashboard server's event stream (server-sent events, one recording entry per message) and
 * its status snapshot, each reconnecting by itself with backoff. The stream starts with the whole history, so
 * a reconnect simply starts the fold again.
 */
import type { Entry } from "../../../sdk/run/recording.ts";
import { nextDelay } from "./backoff.ts";
import type { Snapshot } from "../../server/snapshot.ts";

export type { Snapshot };

export interface LiveHandlers {
  onReset(): void;
  onEntry(e: Entry): void;
  onStream(up: boolean): void;
  onSnapshot(s: Snapshot | null, error?: string): void;
}

export function connectLive(h: LiveHandlers): () => void {
  let stopped = false;
  let source: EventSource | undefined;
  let streamFailures = 0;
  let streamTimer: ReturnType<typeof setTimeout> | undefined;
  const open = () => {
    if (stopped) return;
    source = new EventSource("api/stream");
    let first = true;
    source.onopen = () => {
      streamFailures = 0;
      h.onStream(true);
    };
    source.onmessage = (m) => {
      if (first) {
        first = false;
        h.onReset();
      }
      try {
        h.onEntry(JSON.parse(m.data) as Entry);
      } catch {
        /* a malformed message is skipped, never guessed at */
      }
    };
    source.onerror = () => {
      source?.close();
      h.onStream(false);
      streamFailures += 1;
      streamTimer = setTimeout(open, nextDelay(streamFailures));
    };
  };
  open();

  let snapFailures = 0;
  let snapTimer: ReturnType<typeof setTimeout> | undefined;
  const poll = async () => {
    if (stopped) return;
    try {
      const res = await fetch("api/status");
      if (!res.ok) throw new Error(`status ${res.status}`);
      h.onSnapshot((await res.json()) as Snapshot);
      snapFailures = 0;
    } catch (err) {
      snapFailures += 1;
      h.onSnapshot(null, (err as Error).message);
    }
    snapTimer = setTimeout(poll, snapFailures ? nextDelay(snapFailures) : 2000);
  };
  void poll();

  return () => {
    stopped = true;
    source?.close();
    clearTimeout(streamTimer);
    clearTimeout(snapTimer);
  };
}
