import { memo, useMemo, useState } from "react";
import { describeEvent, eventKind, jobTemplates, type MetricWords } from "../../../sdk/words/sentences.ts";
import { metricText } from "../../../workloads/metric.ts";
import { templateOf, type DashboardConfig } from "../sources/config.ts";
import type { ChainEvent } from "../../../sdk/run/recording.ts";
import type { RunState } from "../model/state.ts";
import { nameOf } from "../model/state.ts";
import { short } from "../format.ts";
import { DataTable } from "./DataTable.tsx";

/** Decoded contract events, newest first, filterable by kind, job and provider. */
export function EventFeed({
  state,
  limit = 200,
  id,
  config,
}: {
  state: RunState;
  limit?: number;
  id: string;
  /** Names the jobs' templates, so a verdict reads in its own metric. */
  config?: DashboardConfig | null;
}) {
  const [kind, setKind] = useState("all");
  const [job, setJob] = useState("");
  const [who, setWho] = useState("");
  const events = state.events;
  const rows = useMemo(() => {
    const out = [];
    for (let i = events.length - 1; i >= 0 && out.length < limit; i--) {
      const e = events[i];
      if (kind !== "all" && eventKind(e.name) !== kind) continue;
      if (job && String(e.args.jobId ?? "") !== job) continue;
      if (who) {
        const p = String(e.args.provider ?? e.args.account ?? "").toLowerCase();
        if (!p || (p !== who.toLowerCase() && nameOf(state, p).toLowerCase() !== who.toLowerCase())) continue;
      }
      out.push({ e, at: i }); // its place in the run: a key that stays as newer events arrive above it
    }
    return out;
  }, [events.length, kind, job, who]);
  const providers = [...state.providers.values()];
  const templates = useMemo(() => jobTemplates(events), [events.length]);
  const metric: MetricWords = (jobId, m) => {
    const t = templateOf(config, templates.get(String(jobId)) ?? "");
    return t && metricText(t, m);
  };
  return (
    <div className="feed">
      <div className="filters" role="group" aria-label="Filter events">
        <label>
          Kind{" "}
          <select value={kind} onChange={(e) => setKind(e.target.value)} id={`${id}-kind`}>
            {["all", "jobs", "checkpoints", "providers", "money", "admin"].map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </label>
        <label>
          Job{" "}
          <input
            value={job}
            onChange={(e) => setJob(e.target.value.trim())}
            placeholder="any"
            size={4}
            inputMode="numeric"
          />
        </label>
        <label>
          Provider{" "}
          <select value={who} onChange={(e) => setWho(e.target.value)}>
            <option value="">any</option>
            {providers.map((p) => (
              <option key={p.key} value={p.key}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">
          {rows.length} of {events.length} events
        </span>
      </div>
      <DataTable label="Events" columns={["Block", "Event", "What happened", "Transaction"]}>
        {rows.map(({ e, at }) => (
          <EventRow key={at} e={e} text={describeEvent(e, (a) => nameOf(state, a), undefined, metric)} />
        ))}
      </DataTable>
    </div>
  );
}

/** One row; the pages re-render several times a second in playback, a row only when its text changes. */
const EventRow = memo(function EventRow({ e, text }: { e: ChainEvent; text: string }) {
  return (
    <tr className={`ev-${eventKind(e.name)}`}>
      <td className="num">{e.blockNumber}</td>
      <td>
        <code>{e.name}</code>
      </td>
      <td>{text}</td>
      <td className="mono">{e.transactionHash ? short(e.transactionHash) : "—"}</td>
    </tr>
  );
});
