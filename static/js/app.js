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
  const box = document.getElementById("toasts");
  if (!box) return;
  const toast = document.createElement("div");
  toast.className = "toast";
  toast.textContent = (event.detail && event.detail.value) || "Saved";
  box.appendChild(toast);
});
