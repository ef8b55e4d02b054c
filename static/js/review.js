// Rationale review: keyboard-first keep / discard of the selected criterion, next / previous.
// Every action is a real form or link; these keys only press them. Never while typing.
(function () {
  "use strict";
  let selected = null; // criterion id of the selected block
  let advanceFrom = null; // after a decision on this criterion, select the next one
  let pending = false; // a decision form was sent with htmx; the next swap is its answer

  function blocks() {
    return Array.from(document.querySelectorAll("[data-reviewable]"));
  }

  function select(block, scroll) {
    blocks().forEach(function (b) { b.classList.toggle("selected", b === block); });
    selected = block ? block.dataset.criterion : null;
    if (block && scroll) block.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function current() {
    return blocks().find(function (b) { return b.dataset.criterion === selected; }) || null;
  }

  function move(step) {
    const all = blocks();
    if (!all.length) return;
    const i = all.indexOf(current());
    const next = i < 0 ? all[0] : all[Math.max(0, Math.min(all.length - 1, i + step))];
    select(next, true);
  }

  function isTyping(target) {
    if (!target || !target.tagName) return false;
    if (target.isContentEditable) return true;
    const tag = target.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select") return true;
    if (tag !== "input") return false;
    return !["radio", "checkbox", "button", "submit", "hidden"].includes(target.type);
  }

  function discardForm(key) {
    const holder = document.querySelector('[data-discard-for="' + key + '"]');
    return holder ? holder.querySelector("[data-discard-form]") : null;
  }

  function openDiscard(key) {
    document.querySelectorAll("[data-discard-form]").forEach(function (f) { f.hidden = true; });
    const form = discardForm(key);
    if (!form) return;
    form.hidden = false;
    const first = form.querySelector('input[type="radio"]');
    if (first) first.focus();
  }

  function closeDiscard(form) {
    form.hidden = true;
    const block = current();
    if (block) block.focus({ preventScroll: true });
  }

  function submit(form) {
    if (!form) return;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  function click(id) {
    const el = document.getElementById(id);
    if (el && el.href) window.location.href = el.href;
  }


  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const form = event.target.closest ? event.target.closest("[data-discard-form]") : null;
    if (form) {
      // Inside an open discard form: 1/2/3 pick the reason, Enter discards, Esc cancels.
      if (event.key === "Escape") { event.preventDefault(); closeDiscard(form); return; }
      if (isTyping(event.target)) return;
      const radios = form.querySelectorAll('input[type="radio"]');
      const n = parseInt(event.key, 10);
      if (n >= 1 && n <= radios.length) {
        event.preventDefault();
        radios[n - 1].checked = true;
        radios[n - 1].focus();
        if (radios[n - 1].value === "other") form.querySelector('input[name="note"]').focus();
        return;
      }
      if (event.key === "Enter") { event.preventDefault(); submit(form); }
      return;
    }
    if (isTyping(event.target)) return;
    switch (event.key) {
      case "ArrowDown": event.preventDefault(); move(1); break;
      case "ArrowUp": event.preventDefault(); move(-1); break;
      case "k": {
        const block = current();
        if (block) { advanceFrom = block.dataset.criterion; submit(block.querySelector("[data-keep-form]")); }
        break;
      }
      case "d": {
        const block = current();
        if (block) { event.preventDefault(); advanceFrom = block.dataset.criterion; openDiscard(block.dataset.criterion); }
        break;
      }
      case "j": case "n": click("nav-next"); break;
      case "p": click("nav-prev"); break;
      case "r": submit(document.getElementById("mark-next")); break;
      default: break;
    }
  });

  document.addEventListener("click", function (event) {
    const opener = event.target.closest("[data-open-discard]");
    if (opener) {
      const key = opener.dataset.openDiscard;
      const block = document.getElementById("crit-" + key);
      if (block) { select(block, false); advanceFrom = key; }
      openDiscard(key);
      return;
    }
    const cancel = event.target.closest("[data-cancel]");
    if (cancel) { closeDiscard(cancel.closest("[data-discard-form]")); return; }
    const block = event.target.closest("[data-reviewable]");
    if (block && !event.target.closest("form, a, button")) select(block, false);
  });

  document.addEventListener("submit", function (event) {
    if (!event.target.hasAttribute("hx-post")) return;
    pending = true;
    const block = event.target.closest("[data-reviewable]");
    if (block) advanceFrom = block.dataset.criterion;
  });

  document.body.addEventListener("htmx:afterSettle", function () {
    hideClosedForms();
    if (!pending) return;
    pending = false;
    const body = document.getElementById("review-body");
    const error = body && body.querySelector('[role="alert"]');
    const all = blocks();
    let target = all.find(function (b) { return b.dataset.criterion === (advanceFrom || selected); });
    if (!error && target && advanceFrom) {
      const i = all.indexOf(target);
      target = all[Math.min(all.length - 1, i + 1)];
    }
    advanceFrom = null;
    select(target || all[0] || null, true);
    if (error) {
      const open = body.querySelector("[data-discard-form]:not([hidden]) input[type=radio]");
      if (open) open.focus();
    }
  });

  // Without JavaScript every discard form stays visible (the page works as plain forms);
  // with it, a form opens on "d" or "Discard…", unless the server reopened it with an error.
  function hideClosedForms() {
    document.querySelectorAll("[data-discard-form]:not([data-open])").forEach(function (f) {
      f.hidden = true;
    });
  }

  function start() {
    hideClosedForms();
    const all = blocks();
    select(all.find(function (b) { return !b.querySelector(".badge.ok, .badge.bad"); }) || all[0] || null, false);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
