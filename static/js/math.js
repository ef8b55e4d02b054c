// Typeset the formulas the server marked as .math-inline / .math-display, on load and after
// every htmx swap. The one KaTeX configuration of the site: trust is off, so \href, \url,
// \htmlClass and the like render as inert text. A formula KaTeX cannot parse stays as its TeX,
// marked .math-error (KaTeX's own error box would need a style attribute, which the CSP refuses).
(function () {
  "use strict";
  const OPTIONS = {
    throwOnError: true,
    trust: false,
    strict: "ignore",
    maxExpand: 1000,
    maxSize: 20,
  };

  function typeset(root) {
    if (!window.katex || !root || !root.querySelectorAll) return;
    const found = Array.from(root.querySelectorAll(".math-inline, .math-display"));
    if (root.matches && root.matches(".math-inline, .math-display")) found.push(root);
    found.forEach(function (el) {
      if (el.dataset.typeset) return;
      const tex = el.textContent;
      const display = el.classList.contains("math-display");
      try {
        window.katex.render(tex, el, Object.assign({ displayMode: display }, OPTIONS));
      } catch (error) {
        el.textContent = tex;
        el.classList.add("math-error");
        el.title = String(error && error.message || error);
      }
      el.dataset.typeset = "1";
    });
  }

  window.typesetMath = typeset;
  document.addEventListener("DOMContentLoaded", function () { typeset(document.body); });
  // afterSwap runs as soon as new content is in place (before htmx settles); load covers the rest.
  document.addEventListener("htmx:afterSwap", function () { typeset(document.body); });
  document.addEventListener("htmx:load", function (event) { typeset(event.detail.elt); });
})();
