/**
 * A read-only view of the collector's pending decisions, for dashboards (`GET /pending`): per digest, what is
 * being decided and which Safe owners signed so far — the verifiers' decisions before they land on chain.
 * Pure: reads the pool, never changes it.
 */
import type { JsonResponse } from "../http.ts";
import { describeDecision, type Pool } from "./decide.ts";

export function pendingView(pool: Pool): JsonResponse {
  const pending = [...pool.values()].map((p) => ({
    digest: p.digest,
    kind: p.decision.kind,
    ...describeDecision(p.decision),
    signers: [...p.signatures.values()].map((s) => s.signer),
  }));
  return { status: 200, body: { pending } };
}
