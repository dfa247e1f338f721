/** The view lives in the URL (page, run, playback time, job, provider), so a view can be shared and reloaded. */
import { PAGES, type PageId } from "./pageList.ts";

export { PAGES, type PageId };

export interface View {
  page: PageId;
  run: string | null;
  t: number | null;
  job: string | null;
  provider: string | null;
}

export function readView(search = location.search): View {
  const q = new URLSearchParams(search);
  const page = (PAGES.find((p) => p.id === q.get("page"))?.id ?? "status") as PageId;
  const t = q.get("t");
  return {
    page,
    run: q.get("run"),
    t: t && /^\d+$/.test(t) ? Number(t) : null,
    job: q.get("job"),
    provider: q.get("provider"),
  };
}

export function writeView(v: View, push: boolean): void {
  const q = new URLSearchParams();
  if (v.page !== "status") q.set("page", v.page);
  if (v.run) q.set("run", v.run);
  if (v.run && v.t !== null) q.set("t", String(Math.floor(v.t)));
  if (v.job) q.set("job", v.job);
  if (v.provider) q.set("provider", v.provider);
  const url = `${location.pathname}${q.size ? "?" + q : ""}`;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}
