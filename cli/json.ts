/**
 * `--json` for every command that reports (wallet, reserves, job, settle, withdraw, explain): one shape, documented
 * in README.md ("Machine-readable output"). With --json, standard output holds exactly one JSON document: the
 * report, or `{ "error": { … } }` when the command fails (exit non-zero). Whatever else a command says (a sent
 * transaction, a warning) goes to standard error. Amounts are a decimal string of token base units (`"60000"`)
 * beside the same amount written out (`"0.060000 USDC"`, field name + `Usdc`); addresses are checksummed (EIP-55),
 * with a `…Name` field where the name is known (cli/names.ts); job ids and block numbers are decimal strings.
 */
import { getAddress } from "ethers";
import { formatUsdc } from "../sdk/words/format.ts";

/** The commands that take --json (`provide --json` is its agent's log format, not a report). */
export const JSON_COMMANDS = new Set(["wallet", "reserves", "job", "settle", "withdraw", "explain"]);

let jsonMode = false;
let stdoutWrite: ((text: string) => boolean) | undefined;

/** From here on, console.log goes to standard error: standard output keeps the one document. */
export function startJsonMode(): void {
  if (jsonMode) return;
  jsonMode = true;
  stdoutWrite = process.stdout.write.bind(process.stdout) as (text: string) => boolean;
  console.log = (...args: unknown[]) => console.error(...args);
  console.info = console.log;
}

export const inJsonMode = (): boolean => jsonMode;

/** Writes the command's one JSON document to standard output (bigints as decimal strings). */
export function emitJson(doc: unknown): void {
  const write = stdoutWrite ?? ((t: string) => process.stdout.write(t));
  write(`${JSON.stringify(doc, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`);
}

/** `{ [key]: "60000", [key + "Usdc"]: "0.060000 USDC" }`: an amount as the JSON reports carry it. */
export function amount<K extends string>(key: K, units: bigint): Record<K | `${K}Usdc`, string> {
  return { [key]: units.toString(), [`${key}Usdc`]: formatUsdc(units) } as Record<K | `${K}Usdc`, string>;
}

/** `{ [key]: "0xAbC…", [key + "Name"]: "alice" | null }`: an address, checksummed, and its name where known. */
export function addressField<K extends string>(
  key: K,
  address: string,
  names: Record<string, string> = {},
): Record<K | `${K}Name`, string | null> {
  return { [key]: getAddress(address), [`${key}Name`]: names[address.toLowerCase()] ?? null } as Record<
    K | `${K}Name`,
    string | null
  >;
}

/** The flag itself, for a command's options. */
export const JSON_OPTION = { json: { type: "boolean", default: false } } as const;
