/**
 * A recording of one run: every decision line, chain event, metric sample and badge, as JSON lines with the time
 * since the start. `npm start -- --replay FILE` plays it back (with the "Recorded" badge).
 */
import { createReadStream, createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { encodeEntry, RunLog, type Entry } from "../sdk/run/recording.ts";

export class Recorder {
  private readonly out: WriteStream;
  /** What is written, as it is written: the dashboard's live feed follows it (dashboard/server/feed.ts runLog). */
  readonly log = new RunLog();
  readonly file: string;

  constructor(file: string) {
    mkdirSync(path.dirname(file), { recursive: true });
    this.file = file;
    this.out = createWriteStream(file, { flags: "w" });
  }

  add(kind: Entry["kind"], source: string, data: unknown): void {
    this.out.write(encodeEntry(this.log.add(kind, source, data)) + "\n");
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(resolve));
  }
}

/**
 * Pure: a recorded line as the playback shows it. What pointed at the recording machine's run is not shown as if it
 * were here: its dashboard URL (nothing serves it during a playback) is left out, and the recording it names is the
 * file being played.
 */
export function playedLine(line: string, file: string): string | undefined {
  if (/^dashboard: https?:\/\//.test(line)) return undefined;
  if (line.startsWith("recording: ")) return `recording: ${file}`;
  return line;
}

/** Plays a recording back, printing what a live run printed, `speed` times faster. */
export async function replay(file: string, print: (line: string) => void, speed = 20): Promise<number> {
  print(`[Recorded] playing back ${file} (${speed}× speed)`);
  let last = 0;
  let failed = false;
  for await (const text of createInterface({ input: createReadStream(file) })) {
    if (!text.trim()) continue;
    const entry = JSON.parse(text) as Entry;
    const wait = Math.min(1_000, (entry.ms - last) / speed);
    last = entry.ms;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (entry.kind === "note" || entry.kind === "summary") {
      const lines = Array.isArray(entry.data) ? entry.data : [String(entry.data)];
      for (const line of lines) {
        const shown = playedLine(String(line), file);
        if (shown !== undefined) print(`[Recorded] ${shown}`);
      }
      if (entry.kind === "summary" && lines.some((l: string) => l.includes("BROKEN"))) failed = true;
    }
  }
  return failed ? 1 : 0;
}
