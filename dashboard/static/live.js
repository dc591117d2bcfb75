// Refreshes every element with a data-live URL in place, every 2 s, while the page is visible.
"use strict";
(function () {
  function refresh(el) {
    if (document.hidden) return;
    fetch(el.dataset.live, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        // Sent to the sign-in page (the session ended): show it as a page, not inside the charts.
        if (r.redirected) { window.location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) { if (html !== null) el.innerHTML = html; })
      .catch(function () {});
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(function (el) {
      setInterval(function () { refresh(el); }, 2000);
    });
  });
})();
