// Session countdown, one ES module for the dashboard (pn.custom.AnyWidgetComponent) and the
// notebook widget (anywidget). Model: expires_at (epoch seconds, UTC), status
// ("open" | "committed" | "abandoned" | "expired"). Ticks in the browser every second.

function human(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${r} s`;
  return `${r} s`;
}

export default {
  render({ model, el }) {
    const span = document.createElement("span");
    span.className = "zl-countdown";
    el.appendChild(span);

    const draw = () => {
      const status = model.get("status") || "open";
      if (status === "expired") {
        span.dataset.state = "expired";
        span.textContent = "expired";
        return;
      }
      if (status !== "open") {
        span.dataset.state = "closed";
        span.textContent = status;
        return;
      }
      const left = Number(model.get("expires_at")) - Date.now() / 1000;
      if (!(left > 0)) {
        span.dataset.state = "expired";
        span.textContent = "expired";
      } else {
        span.dataset.state = "open";
        span.textContent = `expires in ${human(left)}`;
      }
    };

    draw();
    const timer = setInterval(draw, 1000);
    model.on("change:expires_at", draw);
    model.on("change:status", draw);
    return () => {
      clearInterval(timer);
      span.remove();
      if (typeof model.off === "function") {
        model.off("change:expires_at", draw);
        model.off("change:status", draw);
      }
    };
  },
};
