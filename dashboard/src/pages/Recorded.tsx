/** Recorded run: the recordings found, each played through the same pages with the Recorded badge. */
import type { PageProps } from "../context.ts";

export function RecordedPage(p: PageProps) {
  const list = p.config?.recordings ?? [];
  const s = p.run.state;
  return (
    <div className="grid">
      <section className="card span-all" aria-labelledby="rec-h">
        <h2 id="rec-h">Recordings</h2>
        <p>
          A recording is a real run of <code>npm start</code> saved as JSON lines (every decision line, chain event and
          reserves sample). It plays through the same views as a live run; every page shows the Recorded badge while it
          plays.
        </p>
        {list.length === 0 ? (
          <p className="muted">No recording found by the dashboard server.</p>
        ) : (
          <ul className="rec-list">
            {list.map((r) => (
              <li key={r.name}>
                <button
                  onClick={() => p.go({ run: r.name, page: "status" })}
                  aria-current={p.view.run === r.name ? "true" : undefined}
                >
                  Play {r.name}
                </button>{" "}
                <span className="muted">
                  {r.entries} entries · {r.date}
                </span>
              </li>
            ))}
          </ul>
        )}
        {p.recorded && (
          <>
            <h3>Now playing: {p.view.run}</h3>
            <p>
              {s.entries} entries so far · {s.events.length} chain events · block {s.lastBlock}
            </p>
            {s.summary && (
              <pre className="summary" aria-label="The run's closing summary" tabIndex={0}>
                {s.summary.join("\n")}
              </pre>
            )}
          </>
        )}
        {p.recorded && <button onClick={() => p.go({ run: null })}>Back to live</button>}
      </section>
    </div>
  );
}
