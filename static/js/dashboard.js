// The dashboard redraws its figures when the aggregation job it is watching succeeds: the page
// is fetched again and every [data-figures] region is swapped for its new version, so nobody
// has to reload. A job that had already finished when the page was drawn changes nothing.
(function () {
  "use strict";
  const seen = new Set();
  function succeededCard() {
    return document.querySelector('#aggregate-job .job[data-job-status="succeeded"]');
  }
  const initial = succeededCard();
  if (initial) seen.add(initial.id);

  function refresh() {
    const regions = document.querySelectorAll("[data-figures]");
    regions.forEach(function (el) { el.classList.add("refreshing"); });
    fetch(window.location.href, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error(response.status);
        return response.text();
      })
      .then(function (html) {
        const fresh = new DOMParser().parseFromString(html, "text/html");
        regions.forEach(function (el) {
          const next = fresh.getElementById(el.id);
          if (next) {
            el.replaceWith(next);
            if (window.htmx) window.htmx.process(next);
            if (typeof applyDataStyles === "function") applyDataStyles(next);
          } else {
            el.classList.remove("refreshing");
          }
        });
        document.body.dispatchEvent(new CustomEvent("toast", { detail: { value: "Figures updated" } }));
      })
      .catch(function () {
        regions.forEach(function (el) { el.classList.remove("refreshing"); });
      });
  }

  document.body.addEventListener("htmx:afterSettle", function () {
    const card = succeededCard();
    if (card && !seen.has(card.id)) {
      seen.add(card.id);
      refresh();
    }
  });
})();
