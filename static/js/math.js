// Typeset LaTeX in elements marked data-math, on load and after every htmx swap.
(function () {
  const options = {
    delimiters: [
      { left: "$$", right: "$$", display: false },
      { left: "\\[", right: "\\]", display: false },
      { left: "\\(", right: "\\)", display: false },
      { left: "$", right: "$", display: false },
    ],
    ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code", "option"],
    throwOnError: false,
  };
  function render(root) {
    if (typeof window.renderMathInElement !== "function") return;
    root.querySelectorAll("[data-math]").forEach(function (el) { window.renderMathInElement(el, options); });
  }
  document.addEventListener("DOMContentLoaded", function () { render(document); });
  document.addEventListener("htmx:afterSettle", function (event) { render(event.target); });
})();
