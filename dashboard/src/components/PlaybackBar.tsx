import { memo } from "react";
import type { Playback, Run } from "../run.ts";
import { SPEEDS } from "../run.ts";
import { clock } from "../format.ts";

const MARK_COLOR: Record<string, string> = {
  refusal: "#f87171",
  failover: "#fbbf24",
  kill: "#fb923c",
  verdict: "#60a5fa",
  settle: "#34d399",
  fault: "#f87171",
};

/** Play/pause, speed and a scrubber marked with the run's events; the recording's name and date. */
export function PlaybackBar({ playback: pb, control }: { playback: Playback; control: Run["control"] }) {
  const dur = Math.max(1, pb.durationMs);
  return (
    <section className="playback" aria-label="Recorded run playback">
      <div className="pb-title">
        <strong>Recorded run</strong> {pb.name}
        <span className="muted"> · {pb.date}</span>
        {pb.error && <span className="error"> · could not load: {pb.error}</span>}
      </div>
      <div className="pb-controls">
        <button onClick={control.toggle} aria-label={pb.playing ? "Pause" : "Play"} aria-keyshortcuts="Space">
          {pb.playing ? "Pause" : "Play"}
        </button>
        <label>
          <span className="sr-only">Speed</span>
          <select aria-label="Playback speed" value={pb.speed} onChange={(e) => control.speed(Number(e.target.value))}>
            {SPEEDS.map((s) => (
              <option key={s} value={s}>
                {s}×
              </option>
            ))}
          </select>
        </label>
        <div className="scrubber">
          <input
            type="range"
            min={0}
            max={dur}
            step={100}
            value={pb.t}
            aria-label="Playback position"
            aria-valuetext={`${clock(pb.t)} of ${clock(dur)}`}
            onChange={(e) => control.seek(Number(e.target.value))}
          />
          <Marks markers={pb.markers} dur={dur} />
        </div>
        <span className="pb-time" aria-live="off">
          {clock(pb.t)} / {clock(dur)}
        </span>
      </div>
      <MarkList markers={pb.markers} />
    </section>
  );
}

// The bar re-renders every animation frame while playing; the run's markers (hundreds in a long run) do not change
// then, so they render once per recording.
const Marks = memo(function Marks({ markers, dur }: { markers: Playback["markers"]; dur: number }) {
  return (
    <div className="marks" aria-hidden="true">
      {markers.map((m, i) => (
        <span
          key={i}
          className="mark"
          title={m.label}
          style={{ left: `${(m.ms / dur) * 100}%`, background: MARK_COLOR[m.kind] ?? "#aaa" }}
        />
      ))}
    </div>
  );
});

const MarkList = memo(function MarkList({ markers }: { markers: Playback["markers"] }) {
  return (
    <ul className="sr-only" aria-label="Marked events">
      {markers.map((m, i) => (
        <li key={i}>
          {clock(m.ms)} {m.label}
        </li>
      ))}
    </ul>
  );
});
