// Keeps an inbox page current: polls the JSON endpoint named by <body data-poll-url> and
// reloads when its fingerprint differs from the one the page was rendered with. A page whose
// form has been touched is never reloaded under the person's hands: a banner offers it instead.
(function () {
  "use strict";
  const body = document.body;
  const url = body.dataset.pollUrl;
  if (!url) return;
  const rendered = body.dataset.fingerprint;
  const every = Number(body.dataset.refreshMs) || 2000;
  let touched = false;
  let submitting = false;
  document.addEventListener("input", function () { touched = true; });
  document.addEventListener("change", function () { touched = true; });
  // A form on its way: its answer may change the call before the response arrives, and a
  // refresh then would cancel the navigation that shows the person their answer's verdict.
  document.addEventListener("submit", function () { submitting = true; });

  async function check() {
    if (submitting) return;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) {
        const current = await response.json();
        if (current.fingerprint && current.fingerprint !== rendered) {
          // Navigate rather than reload: after a refused post, reloading would post again.
          if (submitting) return;
          if (!touched) { window.location.replace(body.dataset.pageUrl || window.location.href); return; }
          document.getElementById("changed").hidden = false;
        }
      }
    } catch (error) {
      // The inbox may be restarting; try again on the next tick.
    }
    window.setTimeout(check, every);
  }
  window.setTimeout(check, every);
})();
