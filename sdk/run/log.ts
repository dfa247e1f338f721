/**
 * Structured logs: one JSON line per decision (job, epoch, step, action, reason), so a dashboard or `jq` can
 * read them. `--pretty` prints the same fields as a short human line instead.
 */
export type Level = "debug" | "info" | "warn" | "error";

export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  component: string;
  pretty?: boolean;
  write?: (line: string) => void;
  now?: () => Date;
}

export function createLogger(opts: LoggerOptions, base: Record<string, unknown> = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const now = opts.now ?? (() => new Date());
  const log = (level: Level, msg: string, fields: Record<string, unknown> = {}) => {
    const record = { t: now().toISOString(), level, component: opts.component, msg, ...base, ...fields };
    write(opts.pretty ? prettyLine(record) : JSON.stringify(record, jsonSafe));
  };
  return {
    log,
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
    child: (fields) => createLogger(opts, { ...base, ...fields }),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

function prettyLine(r: Record<string, unknown>): string {
  const { t, level, component, msg, ...rest } = r;
  const extras = Object.entries(rest)
    .map(
      ([k, v]) =>
        `${k}=${typeof v === "bigint" ? v.toString() : typeof v === "object" ? JSON.stringify(v, jsonSafe) : v}`,
    )
    .join(" ");
  const time = String(t).slice(11, 19);
  return `${time} ${level === "info" ? "" : String(level).toUpperCase() + " "}[${component}] ${msg}${extras ? "  " + extras : ""}`;
}
