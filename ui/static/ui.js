// Runway's own script (no inline script anywhere: the Content-Security-Policy forbids it).
// Nothing here yet but what htmx cannot say in attributes.
"use strict";
document.addEventListener("htmx:responseError", function (event) {
  // A refused request (403 CSRF, 401 sign-in, 413 too large) still shows its answer's text.
  var target = event.detail.target;
  var xhr = event.detail.xhr;
  if (target && xhr && xhr.responseText) {
    var box = document.getElementById("request-error");
    if (box) {
      box.textContent = "The portal refused the request (" + xhr.status + "). Reload the page and try again.";
      box.hidden = false;
    }
  }
});
// models: a "copy" button copies the text of the element its data-copy names.
document.addEventListener("click", function (event) {
  var button = event.target.closest ? event.target.closest("[data-copy]") : null;
  if (!button) {
    return;
  }
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (source && navigator.clipboard) {
    navigator.clipboard.writeText(source.textContent).then(function () {
      button.textContent = "Copied";
    }, function () {
      button.textContent = "Copy failed: select the text";
    });
  }
});
