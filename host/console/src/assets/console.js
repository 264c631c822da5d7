// The toolwarden console's only script: countdowns to each approval's
// expiry, and pages that list approvals kept up to date when one is asked,
// decided or used (server-sent events from /console/events). No framework,
// nothing fetched from elsewhere; the pages work without it.
//
// A live page is updated in place, never reloaded: a reload that lands on a
// person's click or typed reason throws them away. A card someone is typing
// into or pressing stays as it is, and once a form is sent the page stops
// updating (the answer replaces it).
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

  var body = document.body;
  if (body.getAttribute("data-live") !== "approvals" || !window.EventSource ||
      !window.fetch || !window.DOMParser) {
    return;
  }
  var source = new EventSource("/console/events?since=" +
    encodeURIComponent(body.getAttribute("data-version") || ""));
  var sent = false;
  document.addEventListener("submit", function () {
    sent = true;
    source.close();
  }, true);

  // Whether a person is at work in `el`: focus inside it, or text typed.
  function inUse(el) {
    var active = document.activeElement;
    if (active && active !== body && el.contains(active)) {
      return true;
    }
    return Array.prototype.some.call(el.querySelectorAll("input[type=text], textarea"),
      function (field) { return field.value !== ""; });
  }

  // Puts `fresh`'s children in `main`, keeping the ones in use where they
  // are (moving a focused element would take its focus away).
  function update(main, fresh) {
    var kept = {};
    Array.prototype.slice.call(main.children).forEach(function (el) {
      if (el.id && inUse(el)) {
        kept[el.id] = el;
      } else {
        el.remove();
      }
    });
    var at = main.firstElementChild;
    Array.prototype.slice.call(fresh.children).forEach(function (el) {
      var mine = el.id && kept[el.id];
      if (mine) {
        delete kept[el.id];
        if (mine === at) {
          at = at.nextElementSibling;
          return;
        }
        main.insertBefore(mine, at);
        return;
      }
      main.insertBefore(document.importNode(el, true), at);
    });
    Object.keys(kept).forEach(function (id) {
      var gone = kept[id];
      if (!gone.querySelector(".gone")) {
        var note = document.createElement("p");
        note.className = "notice gone";
        note.setAttribute("role", "status");
        note.textContent = "Decided elsewhere or expired meanwhile: sending this form shows its state.";
        gone.insertBefore(note, gone.firstChild);
      }
    });
    tick();
  }

  var running = false;
  var again = false;
  function refresh() {
    if (sent) {
      return;
    }
    if (running) {
      again = true;
      return;
    }
    running = true;
    fetch(location.href, { credentials: "same-origin", redirect: "manual" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the page answered " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!sent && main && fresh) {
          update(main, fresh);
        }
      })
      .catch(function () {
        // Signed out or the server gone: a reload shows the person which.
        if (!sent) {
          location.reload();
        }
      })
      .then(function () {
        running = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }
  source.addEventListener("approvals", refresh);
})();
