// The toolwarden console's only script: countdowns to each approval's
// expiry, and a reload of pages that list approvals when one is asked,
// decided or used (server-sent events from /console/events). No framework,
// nothing fetched from elsewhere; the pages work without it.
(function () {
  "use strict";

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.max(0, Math.round((Number(el.getAttribute("data-expires")) - now) / 1000));
      el.textContent = left > 0
        ? Math.floor(left / 60) + "m " + (left % 60) + "s left"
        : "expired";
    });
  }
  tick();
  setInterval(tick, 1000);

  if (document.body.getAttribute("data-live") !== "approvals" || !window.EventSource) {
    return;
  }
  var waiting = false;
  function typing() {
    var el = document.activeElement;
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA") && el.value !== "";
  }
  function reload() {
    if (typing()) {
      // Someone is writing a reason: reload once they leave the field.
      if (!waiting) {
        waiting = true;
        document.activeElement.addEventListener("blur", function () { location.reload(); }, { once: true });
      }
      return;
    }
    location.reload();
  }
  new EventSource("/console/events").addEventListener("approvals", reload);
})();
