// The labeling screen: keyboard shortcuts, time per vote, image zoom, scroll sync (math: math.js).
// The form works without this file; it only makes the screen faster to use.
(function () {
  "use strict";

  const KEYS = { "1": "A", a: "A", "2": "B", b: "B", "3": "tie", t: "tie" };
  // Graded: the five buttons left to right (values in on-screen terms, +2 = A much better).
  const GRADE_KEYS = { "1": "2", "2": "1", "3": "0", "4": "-1", "5": "-2" };
  // Pointwise: 1-5 score the left response, 6-0 the right one (the keys printed on the buttons).
  const SCORE_KEYS = { "1": ["score_left", "1"], "2": ["score_left", "2"], "3": ["score_left", "3"],
    "4": ["score_left", "4"], "5": ["score_left", "5"], "6": ["score_right", "1"],
    "7": ["score_right", "2"], "8": ["score_right", "3"], "9": ["score_right", "4"], "0": ["score_right", "5"] };

  function scale() { const w = work(); return (w && w.dataset.scale) || "pairwise"; }

  // The input a key stands for on this screen's scale, or null.
  function keyTarget(key) {
    const s = scale();
    if (s === "graded") return GRADE_KEYS[key] ? ["grade", GRADE_KEYS[key]] : null;
    if (s === "pointwise") return SCORE_KEYS[key] || null;
    return KEYS[key] ? ["choice", KEYS[key]] : null;
  }

  // Every answer group of the form (one for pairwise and graded, two for pointwise) is set.
  function answered(w) {
    const groups = w.querySelectorAll("fieldset[data-answer]");
    if (!groups.length) return false;
    return Array.prototype.every.call(groups, function (g) { return !!g.querySelector("input:checked"); });
  }
  let shownAt = performance.now();

  function work() { return document.getElementById("work"); }

  function isTyping(target) {
    if (!target) return false;
    const tag = target.tagName;
    return tag === "TEXTAREA" || tag === "INPUT" && target.type !== "radio" && target.type !== "checkbox" ||
      tag === "SELECT" || target.isContentEditable;
  }


  function updateCount(textarea) {
    const form = textarea.form;
    const count = form && form.querySelector(".rationale .count");
    if (!count) return;
    const min = parseInt(form.dataset.min || "0", 10);
    const n = textarea.value.trim().length;
    // The plural as core.text.counted writes it: "1 character", "2 characters".
    count.textContent = n < min ? n + " / " + min : n + (n === 1 ? " character" : " characters");
    count.classList.toggle("short", n > 0 && n < min);
  }

  function setupItem(root) {
    shownAt = performance.now();
    const textarea = root.querySelector("#rationale");
    if (textarea) {
      updateCount(textarea);
      textarea.addEventListener("input", function () { updateCount(textarea); });
    }
    setupScrollSync(root);
    setupPanes(root);
    // On a phone the pinned footer stays short: the pointwise rubric starts folded (tap to open).
    const rubric = root.querySelector(".rubric");
    if (rubric && window.matchMedia("(max-width: 900px)").matches) rubric.open = false;
    // After an error the typed rationale is back in the field: put the caret at its end.
    const error = root.querySelector(".field-error");
    if (error && textarea) {
      textarea.focus();
      textarea.setSelectionRange(textarea.value.length, textarea.value.length);
    } else if (root.id === "work" || root.querySelector("#work")) {
      const w = work();
      if (w) w.focus({ preventScroll: true });
    }
  }

  // Pointwise: equal scores are a tie; with no tie available, point at the reason at once.
  function warnEqualScores(w) {
    const reason = w.querySelector("#tie-reason");
    const left = w.querySelector('input[name="score_left"]:checked');
    const right = w.querySelector('input[name="score_right"]:checked');
    if (!reason || !left || !right || left.value !== right.value) return;
    reason.classList.remove("flash"); void reason.offsetWidth; reason.classList.add("flash");
  }

  function choose(target) {
    const w = work();
    const input = w && w.querySelector('fieldset[data-answer] input[name="' + target[0] + '"][value="' + target[1] + '"]');
    if (!input) return;
    if (input.disabled) {
      // Say why instead of doing nothing (the reason is printed under the buttons).
      const reason = w.querySelector("#tie-reason");
      if (reason) { reason.classList.remove("flash"); void reason.offsetWidth; reason.classList.add("flash"); }
      return;
    }
    input.checked = true;
    warnEqualScores(w);
    const textarea = w.querySelector("#rationale");
    if (textarea && answered(w)) textarea.focus();
  }

  function submitForm() {
    const w = work();
    const form = w && w.querySelector(".vote-form");
    if (form) form.requestSubmit();
  }

  // Time on the item, written just before the form's values are read (capture phase runs first).
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.classList || !form.classList.contains("vote-form")) return;
    const field = form.querySelector('input[name="seconds"]');
    if (field) field.value = ((performance.now() - shownAt) / 1000).toFixed(1);
  }, true);

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (target && target.id === "rationale") {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submitForm();
      } else if (event.key === "Escape") {
        target.blur();
        const w = work();
        if (w) w.focus({ preventScroll: true });
      }
      return;
    }
    if (isTyping(target) || event.ctrlKey || event.metaKey) return;
    if (event.altKey) {
      if (event.key === "ArrowLeft") {
        const back = work() && work().querySelector("a.back");
        if (back) { event.preventDefault(); back.click(); }
      }
      return;
    }
    if (event.key === "?") {
      const box = document.getElementById("shortcuts");
      if (box) { event.preventDefault(); box.open = !box.open; }
      return;
    }
    if (event.key === "Escape") {
      const box = document.getElementById("shortcuts");
      if (box && box.open) box.open = false;
      return;
    }
    const value = keyTarget(event.key.toLowerCase());
    if (value && !event.shiftKey) {
      event.preventDefault();
      choose(value);
      return;
    }
    if (event.key === "Enter" && !(target && (target.tagName === "BUTTON" || target.tagName === "A" || target.tagName === "SUMMARY"))) {
      const w = work();
      if (w && answered(w)) { event.preventDefault(); submitForm(); }
    }
  });

  // Clicking a choice button with the mouse also moves on to the rationale.
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches('fieldset[data-answer] input[type="radio"]')) {
      const w = work();
      const textarea = w && w.querySelector("#rationale");
      if (w) warnEqualScores(w);
      if (textarea && answered(w)) textarea.focus();
    }
  });

  // A refused vote comes back as 422 with the form and its message: swap it in like a success.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // --- Resizable question panel: drag the handle, or focus it and use the arrow keys ---------
  const SIDE_MIN = 20, SIDE_MAX = 65, SIDE_DEFAULT = 34;
  function sideWidth() {
    const stored = parseFloat(localStorage.getItem("mcs-side-width") || "");
    return isNaN(stored) ? SIDE_DEFAULT : Math.min(SIDE_MAX, Math.max(SIDE_MIN, stored));
  }
  function setSide(body, handle, percent, keep) {
    percent = Math.round(Math.min(SIDE_MAX, Math.max(SIDE_MIN, percent)));
    body.style.setProperty("--side", percent + "%");
    handle.setAttribute("aria-valuenow", String(percent));
    handle.setAttribute("aria-valuetext", "question panel " + percent + "% of the width");
    if (keep) localStorage.setItem("mcs-side-width", String(percent));
  }
  function setupPanes(root) {
    const body = root.querySelector("#work-body") || document.getElementById("work-body");
    const handle = body && body.querySelector(".pane-handle");
    if (!handle) return;
    setSide(body, handle, sideWidth(), false);
    handle.addEventListener("keydown", function (event) {
      const now = sideWidth();
      let next = null;
      if (event.key === "ArrowLeft") next = now - 3;
      else if (event.key === "ArrowRight") next = now + 3;
      else if (event.key === "Home") next = SIDE_DEFAULT;
      if (next === null) return;
      event.preventDefault();
      event.stopPropagation();
      setSide(body, handle, next, true);
    });
    handle.addEventListener("dblclick", function () { setSide(body, handle, SIDE_DEFAULT, true); });
    handle.addEventListener("pointerdown", function (event) {
      event.preventDefault();
      handle.setPointerCapture(event.pointerId);
      handle.classList.add("dragging");
      const rect = body.getBoundingClientRect();
      function move(e) { setSide(body, handle, (e.clientX - rect.left) / rect.width * 100, true); }
      function up() {
        handle.classList.remove("dragging");
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", up);
      }
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", up);
    });
  }

  // --- Scroll together ---------------------------------------------------------------------
  let syncing = false;
  function setupScrollSync(root) {
    const toggle = root.querySelector("#sync-scroll");
    const panes = root.querySelectorAll(".response");
    if (!toggle || panes.length !== 2) return;
    toggle.checked = localStorage.getItem("mcs-sync-scroll") === "1";
    toggle.addEventListener("change", function () {
      localStorage.setItem("mcs-sync-scroll", toggle.checked ? "1" : "0");
    });
    panes.forEach(function (pane, i) {
      const other = panes[1 - i];
      pane.addEventListener("scroll", function () {
        if (!toggle.checked || syncing) return;
        syncing = true;
        const range = pane.scrollHeight - pane.clientHeight;
        const ratio = range > 0 ? pane.scrollTop / range : 0;
        other.scrollTop = ratio * (other.scrollHeight - other.clientHeight);
        requestAnimationFrame(function () { syncing = false; });
      }, { passive: true });
    });
  }

  // --- Image overlay with zoom and pan -----------------------------------------------------
  const view = { scale: 1, x: 0, y: 0 };
  function applyView(img) { img.style.transform = "translate(" + view.x + "px," + view.y + "px) scale(" + view.scale + ")"; }
  function resetView(img) { view.scale = 1; view.x = 0; view.y = 0; applyView(img); }

  document.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("a.zoomable");
    const dialog = document.getElementById("zoom");
    if (link && dialog && typeof dialog.showModal === "function") {
      event.preventDefault();
      const img = dialog.querySelector("img");
      img.src = link.dataset.full || link.href;
      resetView(img);
      dialog.showModal();
      return;
    }
    const tool = event.target.closest && event.target.closest("[data-zoom]");
    if (tool && dialog) {
      const img = dialog.querySelector("img");
      const action = tool.dataset.zoom;
      if (action === "close") dialog.close();
      else if (action === "reset") resetView(img);
      else { view.scale = Math.min(12, Math.max(1, view.scale * (action === "in" ? 1.4 : 1 / 1.4))); applyView(img); }
    }
  });

  function setupZoom() {
    const dialog = document.getElementById("zoom");
    if (!dialog) return;
    const stage = dialog.querySelector(".zoom-stage");
    const img = dialog.querySelector("img");
    stage.addEventListener("wheel", function (event) {
      event.preventDefault();
      const factor = event.deltaY < 0 ? 1.15 : 1 / 1.15;
      const next = Math.min(12, Math.max(1, view.scale * factor));
      // Zoom around the pointer so the spot under it stays put.
      const rect = stage.getBoundingClientRect();
      const px = event.clientX - rect.left - rect.width / 2 - view.x;
      const py = event.clientY - rect.top - rect.height / 2 - view.y;
      view.x -= px * (next / view.scale - 1);
      view.y -= py * (next / view.scale - 1);
      view.scale = next;
      if (next === 1) { view.x = 0; view.y = 0; }
      applyView(img);
    }, { passive: false });
    let drag = null;
    stage.addEventListener("pointerdown", function (event) {
      drag = { x: event.clientX - view.x, y: event.clientY - view.y };
      stage.classList.add("dragging");
      stage.setPointerCapture(event.pointerId);
    });
    stage.addEventListener("pointermove", function (event) {
      if (!drag) return;
      view.x = event.clientX - drag.x; view.y = event.clientY - drag.y; applyView(img);
    });
    function end() { drag = null; stage.classList.remove("dragging"); }
    stage.addEventListener("pointerup", end);
    stage.addEventListener("pointercancel", end);
    stage.addEventListener("dblclick", function () { resetView(img); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupZoom();
    const w = work();
    if (w) setupItem(w);
    // Swapped-in items (next item, error, Back) get the same setup.
    document.body.addEventListener("htmx:afterSwap", function (event) {
      const fresh = work();
      if (fresh && (event.detail.target === fresh || event.detail.target.id === "work" || !document.body.contains(event.detail.target))) {
        setupItem(fresh);
        window.scrollTo(0, 0);
      }
    });
  });
})();

