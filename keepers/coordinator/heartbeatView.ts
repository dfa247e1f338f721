/**
 * A read-only view of the heartbeats the coordinator accepted, for dashboards: `GET /heartbeats` lists the latest
 * accepted beat per provider (job, epoch, step, loss) and its age on the coordinator's clock. It wraps the
 * `POST /heartbeat` route and records only beats that route accepted, so it never changes a decision.
 */
import type { HeartbeatListed } from "../../sdk/rules/heartbeat.ts";
import type { JsonResponse, Route } from "../http.ts";

/** A beat as recorded: what `GET /heartbeats` lists, with when it arrived instead of its age. */
export type BeatSeen = Omit<HeartbeatListed, "ageMs"> & { receivedAt: number };

export class HeartbeatView {
  private readonly latest = new Map<string, BeatSeen>();
  private readonly max: number;

  constructor(maxProviders = 1000) {
    this.max = maxProviders;
  }

  /** `route` with every accepted beat remembered. */
  tap(route: Route, now: () => number): Route {
    return async (body) => {
      const r = await route(body);
      if (r.status === 200) this.record(body as Record<string, unknown>, now());
      return r;
    };
  }

  record(b: Record<string, unknown>, receivedAt: number): void {
    const provider = String(b.provider);
    const key = provider.toLowerCase();
    this.latest.delete(key); // re-insert: the map stays ordered oldest → newest, so the oldest is dropped first
    this.latest.set(key, {
      provider,
      jobId: String(b.jobId),
      epoch: String(b.epoch),
      step: Number(b.step),
      loss: typeof b.loss === "number" && Number.isFinite(b.loss) ? b.loss : null,
      stepsPerSecond:
        typeof b.stepsPerSecond === "number" && Number.isFinite(b.stepsPerSecond) ? b.stepsPerSecond : null,
      profile: typeof b.profile === "string" ? b.profile : null, // verifiers' fault-claim rule (verifier/profiles.ts)
      problem: typeof b.problem === "string" ? b.problem : null, // the dashboard's "what is in the way"
      machine: typeof b.machine === "string" ? b.machine : null, // the dashboard's "Real, separate machine"
      receivedAt,
    });
    if (this.latest.size > this.max) this.latest.delete(this.latest.keys().next().value!);
  }

  /** The handler for `GET /heartbeats`. */
  route(now: () => number): Route {
    return (): JsonResponse => {
      const t = now();
      return {
        status: 200,
        body: { now: t, beats: [...this.latest.values()].map((b) => ({ ...b, ageMs: t - b.receivedAt })) },
      };
    };
  }
}
