/**
 * Pending signatures on disk, so a collector restart loses nothing (verifiers also re-send). One JSON file,
 * rewritten atomically (temp file + rename) after every change; bigints as decimal strings.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { VerifierDecision, Pending, Pool } from "./decide.ts";

export interface StoreIdentity {
  chainId: string;
  escrow: string;
  safe: string;
}

interface FileFormat extends StoreIdentity {
  version: 1;
  pending: {
    digest: string;
    kind: VerifierDecision["kind"];
    message: Record<string, unknown>;
    signatures: { signer: string; signature: string }[];
  }[];
}

const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x), 2);

export function savePool(file: string, id: StoreIdentity, pool: Pool): void {
  const data: FileFormat = {
    version: 1,
    ...id,
    pending: [...pool.values()].map((p) => ({
      digest: p.digest,
      kind: p.decision.kind,
      message: p.decision.message as unknown as Record<string, unknown>,
      signatures: [...p.signatures.values()],
    })),
  };
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, json(data) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}

/**
 * The submissions saved in `file` as raw bodies (they are re-checked like fresh ones), or [] when there is no
 * file. A file written for another chain, escrow or Safe is ignored (with `onMismatch`).
 */
export function loadSubmissions(file: string, id: StoreIdentity, onMismatch: (why: string) => void): unknown[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const data = JSON.parse(text) as FileFormat;
  if (data.version !== 1) {
    onMismatch(`unknown state file version ${data.version}`);
    return [];
  }
  for (const k of ["chainId", "escrow", "safe"] as const) {
    if (String(data[k]).toLowerCase() !== id[k].toLowerCase()) {
      onMismatch(`state file is for ${k} ${data[k]}, not ${id[k]}`);
      return [];
    }
  }
  return data.pending.flatMap((p) =>
    p.signatures.map((s) => ({
      kind: p.kind,
      message: p.message,
      digest: p.digest,
      signer: s.signer,
      signature: s.signature,
    })),
  );
}

export type { Pending };
