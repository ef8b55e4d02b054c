// Typeset the formulas the server marked as .math-inline / .math-display, on load and after
// every htmx swap. The one KaTeX configuration of the site: trust is off, so \href, \url,
// \htmlClass and the like render as inert text. A formula KaTeX cannot parse stays as its TeX,
// marked .math-error (KaTeX's own error box would need a style attribute, which the CSP refuses).
//
// A formula nested too deeply crashes the tab when the browser lays it out, so none is laid out
// unchecked: the server shows a formula past its caps (annotation/rendering.py) as code text, and
// here KaTeX builds each formula outside the page first. A formula longer than the server's cap,
// or whose typeset tree is deeper than MAX_TREE_DEPTH elements (macros it defines itself can nest
// deeper than its source shows), is shown as code text too, as the server would show it.
(function () {
  "use strict";
  const OPTIONS = {
    throwOnError: true,
    trust: false,
    strict: "ignore",
    maxExpand: 1000,
    maxSize: 20,
  };
  // MAX_FORMULA_CHARS of annotation/rendering.py.
  const MAX_CHARS = 4000;
  // KaTeX nests about seven elements per group; the tab crashed at about 1,000 nested elements,
  // and a formula within the server's depth cap (32 groups) stays near 250.
  const MAX_TREE_DEPTH = 400;

  function treeDepth(root) {
    let deepest = 0;
    const stack = [[root, 0]];
    while (stack.length) {
      const [node, depth] = stack.pop();
      if (depth > deepest) deepest = depth;
      for (const child of node.children) stack.push([child, depth + 1]);
    }
    return deepest;
  }

  // The formula as code text in place of its element (a block of code for a display formula).
  function showAsCode(el, tex) {
    const code = document.createElement("code");
    code.className = "language-latex";
    code.textContent = tex;
    if (el.tagName === "DIV") {
      const block = document.createElement("pre");
      block.appendChild(code);
      el.replaceWith(block);
    } else {
      el.replaceWith(code);
    }
  }

  function typesetOne(el) {
    const tex = el.textContent;
    if (tex.length > MAX_CHARS) {
      showAsCode(el, tex);
      return;
    }
    const display = el.classList.contains("math-display");
    const built = document.createElement("span");
    try {
      window.katex.render(tex, built, Object.assign({ displayMode: display }, OPTIONS));
    } catch (error) {
      el.textContent = tex;
      el.classList.add("math-error");
      el.title = String(error && error.message || error);
      el.dataset.typeset = "1";
      return;
    }
    if (treeDepth(built) > MAX_TREE_DEPTH) {
      showAsCode(el, tex);
      return;
    }
    el.replaceChildren(...built.childNodes);
    el.dataset.typeset = "1";
  }

  function typeset(root) {
    if (!window.katex || !root || !root.querySelectorAll) return;
    const found = Array.from(root.querySelectorAll(".math-inline, .math-display"));
    if (root.matches && root.matches(".math-inline, .math-display")) found.push(root);
    found.forEach(function (el) {
      if (!el.dataset.typeset) typesetOne(el);
    });
  }

  window.typesetMath = typeset;
  document.addEventListener("DOMContentLoaded", function () { typeset(document.body); });
  // afterSwap runs as soon as new content is in place (before htmx settles); load covers the rest.
  document.addEventListener("htmx:afterSwap", function () { typeset(document.body); });
  document.addEventListener("htmx:load", function (event) { typeset(event.detail.elt); });
})();
