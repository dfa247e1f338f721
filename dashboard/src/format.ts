/**
 * The page's own formats (short addresses, "3 s ago", the playback clock); amounts and times go through the
 * product-wide sdk/words/format.ts (6 decimals, ISO times), here taking the stream's decimal strings too.
 */
import { usdcAmount } from "../../sdk/words/format.ts";

/** Base units as a bigint (a bigint, the stream's decimal string or a whole number); null for anything else. */
export function baseUnits(units: bigint | string | number | undefined | null): bigint | null {
  if (typeof units === "bigint") return units;
  if (typeof units === "number") return Number.isSafeInteger(units) ? BigInt(units) : null;
  return typeof units === "string" && /^-?\d+$/.test(units.trim()) ? BigInt(units.trim()) : null;
}

/** Base units (a bigint or the stream's decimal string) as "0.040000", for cells headed USDC; none: "unknown". */
export function usdc(units: bigint | string | number | undefined | null): string {
  const u = baseUnits(units);
  return u === null ? "unknown" : usdcAmount(u);
}

export function short(address: string | undefined | null): string {
  if (!address) return "—";
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

export function ago(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 1500) return "just now";
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

export function clock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
