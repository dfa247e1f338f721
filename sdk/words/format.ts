/**
 * One way to show amounts and times, for every command, the settlement table and the dashboard. Pure.
 *   USDC: always 6 decimals (the token's own), so columns line up and 0.04 never reads as 0.4: "0.040000 USDC".
 *   Times: ISO 8601 UTC to the second ("2026-12-01T08:50:23Z"); where a person waits, also "in 2 d 3 h".
 */

export const USDC_DECIMALS = 6;
const UNIT = 10n ** BigInt(USDC_DECIMALS);

/** Test USDC base units as a fixed-decimal number without the unit ("0.040000"), for columns headed "USDC". */
export function usdcAmount(units: bigint): string {
  const sign = units < 0n ? "-" : "";
  const abs = units < 0n ? -units : units;
  return `${sign}${abs / UNIT}.${(abs % UNIT).toString().padStart(USDC_DECIMALS, "0")}`;
}

/**
 * A USDC amount a person typed ("0.001", ".5", "2") → base units; null when it is not one: not a plain decimal,
 * more than 6 decimals, or not above zero.
 */
export function usdcUnits(text: string): bigint | null {
  const m = /^(\d*)(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m || (m[1] === "" && m[2] === undefined)) return null;
  const units = BigInt(m[1] || "0") * UNIT + BigInt((m[2] ?? "").padEnd(USDC_DECIMALS, "0"));
  return units > 0n ? units : null;
}

/** Test USDC base units with the unit: "0.040000 USDC". */
export function formatUsdc(units: bigint): string {
  return `${usdcAmount(units)} USDC`;
}

/** A per-step price: "0.001000 USDC/step". */
export function formatPrice(unitsPerStep: bigint): string {
  return `${usdcAmount(unitsPerStep)} USDC/step`;
}

/**
 * A per-step price as a log line or a person writes it → base units: formatPrice's own text ("0.000800 USDC/step"),
 * a bare amount ("0.0008", "0.0008 USDC") or a number of USDC (0.0008, rounded to 6 decimals); null when it is not
 * a positive price (NaN, a word, nothing). The inverse of formatPrice, so a reader never turns text into "NaN".
 */
export function priceUnits(value: unknown): bigint | null {
  if (typeof value === "number")
    return Number.isFinite(value) && value > 0 ? usdcUnits(value.toFixed(USDC_DECIMALS)) : null;
  if (typeof value !== "string") return null;
  const m = /^\s*([\d.]+)\s*(?:USDC(?:\s*\/\s*step)?)?\s*$/.exec(value);
  return m ? usdcUnits(m[1]) : null;
}

/** Unix seconds (or a Date) as ISO 8601 UTC, to the second. */
export function formatTime(at: bigint | number | Date): string {
  const ms = at instanceof Date ? at.getTime() : Number(at) * 1000;
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A span of seconds, the two largest units: "2 d 3 h", "5 min 20 s", "45 s". */
export function formatDuration(seconds: bigint | number): string {
  let s = Math.max(0, Math.round(Number(seconds)));
  const parts: string[] = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["min", 60],
    ["s", 1],
  ] as const) {
    if (s >= size || (unit === "s" && parts.length === 0)) {
      parts.push(`${Math.floor(s / size)} ${unit}`);
      s %= size;
    }
    if (parts.length === 2) break;
  }
  if (parts.length === 2 && parts[1].startsWith("0 ")) parts.pop();
  return parts.join(" ");
}

/** "in 2 d 3 h" for a moment ahead of `now`, "3 h ago" for one behind (both Unix seconds). */
export function formatWait(at: bigint | number, now: bigint | number): string {
  const delta = Number(at) - Number(now);
  return delta >= 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/** A deadline a person waits for: "2026-12-04T08:50:23Z (in 2 d 23 h)". */
export function formatDeadline(at: bigint | number, now: bigint | number): string {
  return `${formatTime(at)} (${formatWait(at, now)})`;
}
