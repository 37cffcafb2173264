// A session's time to expiry, ticking in the browser: the kernel sends `expires_at` (epoch
// seconds, UTC) and `status` once, and again only when they change (extend, commit, abandon);
// the page counts down on its own and turns "expired" on time. Shared by the notebook widget
// (anywidget `_esm`) and the dashboard.
//
// Contract: export default { render({ model, el }) -> cleanup }; reads model.get("expires_at")
// and model.get("status") ("open" | "committed" | "abandoned" | "expired"); listens to
// change:expires_at and change:status; renders
// <span class="zl-countdown" data-state="open|expired|closed">.

function parts(seconds) {
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d) return `${d} d ${h} h`;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${s} s`;
  return `${s} s`;
}

function view(expiresAt, status, nowMs) {
  if (status === "committed" || status === "abandoned") {
    return { state: "closed", text: status };
  }
  const left = Number(expiresAt) - nowMs / 1000;
  if (status === "expired" || !(left > 0)) {
    return { state: "expired", text: "expired" };
  }
  return { state: "open", text: `expires in ${parts(left)}` };
}

export default {
  render({ model, el }) {
    const span = document.createElement("span");
    span.className = "zl-countdown";
    el.appendChild(span);
    const update = () => {
      const v = view(model.get("expires_at"), model.get("status"), Date.now());
      span.dataset.state = v.state;
      span.textContent = v.text;
      const at = Number(model.get("expires_at"));
      span.title = Number.isFinite(at) && at > 0 ? new Date(at * 1000).toISOString() : "";
    };
    update();
    const timer = setInterval(update, 1000);
    model.on("change:expires_at", update);
    model.on("change:status", update);
    return () => {
      clearInterval(timer);
      model.off("change:expires_at", update);
      model.off("change:status", update);
      span.remove();
    };
  },
};
