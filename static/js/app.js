// Small page helpers shared by every screen; screen-specific code lives beside its template.
document.addEventListener("htmx:responseError", function (event) {
  const box = document.getElementById("toasts");
  if (!box) return;
  const toast = document.createElement("div");
  toast.className = "toast toast-error";
  // A refused request (too large, bad address) says why in a header; anything else is generic.
  const refusal = event.detail.xhr.getResponseHeader("X-Refusal-Message");
  toast.textContent =
    refusal || "The server answered " + event.detail.xhr.status + ". Please try again.";
  box.appendChild(toast);
});
document.body.addEventListener("toast", function (event) {
  const text = (event.detail && event.detail.value) || "Saved";
  // A screen with a status line (the labeling screen) shows it there: it covers nothing, and
  // the next message, or the next screen, replaces it.
  const slot = document.querySelector("[data-status-slot]");
  if (slot) {
    slot.classList.remove("shown");
    slot.textContent = text;
    void slot.offsetWidth; // restart the fade
    slot.classList.add("shown");
    return;
  }
  const box = document.getElementById("toasts");
  if (!box) return;
  const toast = document.createElement("div");
  toast.className = "toast";
  toast.textContent = text;
  box.appendChild(toast);
});
document.addEventListener("animationend", function (event) {
  if (event.target.matches && event.target.matches("[data-status-slot]")) {
    event.target.textContent = "";
    event.target.classList.remove("shown");
  }
});

// Bars and swatches carry their width or colour as data (the CSP allows no style attribute).
function applyDataStyles(root) {
  if (!root || !root.querySelectorAll) return;
  root.querySelectorAll("[data-width]").forEach(function (el) {
    const width = parseFloat(el.dataset.width);
    if (!isNaN(width)) el.style.width = Math.max(0, Math.min(100, width)) + "%";
  });
  root.querySelectorAll("[data-color]").forEach(function (el) { el.style.background = el.dataset.color; });
}
applyDataStyles(document);
document.addEventListener("htmx:afterSwap", function () { applyDataStyles(document); });
document.addEventListener("htmx:load", function (event) {
  applyDataStyles(event.detail.elt.parentNode || event.detail.elt);
});

// A form (or the button that sends it) with data-confirm asks before it is sent (instead of an
// inline onsubmit handler).
document.addEventListener("submit", function (event) {
  const button = event.submitter;
  const message = (button && button.dataset && button.dataset.confirm) ||
    (event.target.dataset && event.target.dataset.confirm);
  if (message && !window.confirm(message)) event.preventDefault();
});
