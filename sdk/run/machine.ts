/**
 * A machine identity for signed heartbeats: a hash of the OS's machine id (never the id itself), the same for
 * every process and network namespace on one machine, different between machines. The dashboard shows "Real,
 * separate machine" only when a provider's differs from the operator's; `--hosts` runs share it by design.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

let cached: string | undefined;

export function machineId(): string {
  if (cached) return cached;
  let raw = "";
  for (const f of ["/etc/machine-id", "/var/lib/dbus/machine-id"]) {
    try {
      raw = readFileSync(f, "utf8").trim();
      if (raw) break;
    } catch {
      // not on this OS; try the next source
    }
  }
  cached =
    "0x" +
    createHash("sha256")
      .update(`gpuchain/machine/v1|${raw || hostname()}`)
      .digest("hex")
      .slice(0, 32);
  return cached;
}

/**
 * The badge a provider's run may carry: "Real, separate machine" only when its signed machine identity differs
 * from the operator's; separate network namespaces on one machine share the identity and say so.
 */
export function machineBadge(
  providerMachine: string | undefined,
  operatorMachine: string,
  namespaces = false,
): string | undefined {
  if (providerMachine !== undefined && providerMachine.toLowerCase() !== operatorMachine.toLowerCase()) {
    return "Real, separate machine";
  }
  return namespaces ? "Separate hosts on one machine" : undefined;
}

/**
 * The longest device model a provider may describe its machine with ("NVIDIA H200", "x86_64 CPU"): 64 bytes of
 * UTF-8 (64 characters of plain ASCII), the same bound as ProviderRegistry's MAX_NAME_LENGTH. The registry itself
 * stores any length, so every reader that shows or forwards a registered model caps it with `capDeviceModel`.
 */
export const MAX_DEVICE_MODEL_BYTES = 64;

/** C0 and C1 control characters, DEL and the Unicode line/paragraph separators: nothing a model name needs. */
function isControl(ch: string): boolean {
  const c = ch.codePointAt(0)!;
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029;
}

/** Why `model` is not an acceptable device model, or undefined: empty, control characters, or over the cap. */
export function deviceModelProblem(model: unknown): string | undefined {
  if (typeof model !== "string" || model.trim() === "") return "device model must be a non-empty string";
  if ([...model].some(isControl)) return "device model must not contain control characters";
  const bytes = Buffer.byteLength(model, "utf8");
  if (bytes > MAX_DEVICE_MODEL_BYTES) {
    return `device model is ${bytes} bytes; at most ${MAX_DEVICE_MODEL_BYTES} (UTF-8)`;
  }
  return undefined;
}

/**
 * The device model cut to MAX_DEVICE_MODEL_BYTES: control characters become spaces, the ends are trimmed, and a
 * longer one ends in "…" within the cap, cut on a character boundary (never half a UTF-8 sequence). Idempotent.
 */
export function capDeviceModel(model: string): string {
  const clean = Array.from(model, (ch) => (isControl(ch) ? " " : ch))
    .join("")
    .trim();
  if (Buffer.byteLength(clean, "utf8") <= MAX_DEVICE_MODEL_BYTES) return clean;
  let room = MAX_DEVICE_MODEL_BYTES - Buffer.byteLength("…", "utf8");
  let out = "";
  for (const ch of clean) {
    room -= Buffer.byteLength(ch, "utf8");
    if (room < 0) break;
    out += ch;
  }
  return out.trimEnd() + "…";
}
