// Enhances the server-rendered page; everything works without it.
// Filters apply as soon as they change, and forms, sort headings and view links fetch the
// same page from the server and swap in its <main> (no reload, scroll kept, URL updated).
// On a phone the parts below the quote start folded; each stays as the reader leaves it.
(function () {
  "use strict";
  document.documentElement.classList.replace("no-js", "js");

  var busy = null;
  var phone = window.matchMedia("(max-width: 600px)");
  var chosen = {}; // fold id -> open, as the reader left it (kept across swaps)

  // Open or close each fold: as the reader chose, else open on a wide screen, folded on a
  // phone; the fold holding `fragment` (a link's or form's target) always opens.
  function settle(fragment) {
    var target = fragment && document.getElementById(fragment);
    document.querySelectorAll("details.fold[id]").forEach(function (fold) {
      var open = fold.id in chosen ? chosen[fold.id] : !phone.matches;
      if (target && (fold.contains(target) || target.contains(fold))) open = chosen[fold.id] = true;
      fold.dataset.settled = String(open);
      fold.open = open;
    });
  }

  document.addEventListener("toggle", function (event) {
    var fold = event.target;
    if (!fold.matches || !fold.matches("details.fold[id]")) return;
    if (String(fold.open) !== fold.dataset.settled) { // the reader's click, not settle()
      chosen[fold.id] = fold.open;
      fold.dataset.settled = String(fold.open);
    }
  }, true);

  // `fragment`: scroll to it; `reveal`: only open the fold holding it.
  function swap(url, push, fragment, reveal) {
    if (busy) busy.abort();
    busy = new AbortController();
    var main = document.getElementById("main");
    var focusedId = document.activeElement && document.activeElement.id;
    main.setAttribute("aria-busy", "true");
    return fetch(url, { headers: { Accept: "text/html" }, signal: busy.signal })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("main");
        if (!next) { window.location.href = url; return; }
        main.replaceWith(next);
        settle(fragment || reveal);
        document.title = doc.title;
        if (push) history.pushState(null, "", url);
        var focus = focusedId && document.getElementById(focusedId);
        if (focus) focus.focus({ preventScroll: true });
        if (fragment) {
          var target = document.getElementById(fragment);
          if (target) target.scrollIntoView({ block: "start" });
        }
        document.dispatchEvent(new CustomEvent("gpuprices:updated", { detail: { url: url } }));
      })
      .catch(function (error) {
        if (error.name !== "AbortError") window.location.href = url;
      });
  }

  function formUrl(form) {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (value !== "") params.append(name, value);
    });
    var query = params.toString();
    return window.location.pathname + (query ? "?" + query : "");
  }

  function fragmentOf(form) {
    var action = form.getAttribute("action") || "";
    var hash = action.indexOf("#");
    if (hash >= 0) return action.slice(hash + 1);
    var section = form.closest("section");
    return section && section.id;
  }

  document.addEventListener("change", function (event) {
    var form = event.target.form;
    if (form && form.hasAttribute("data-auto")) swap(formUrl(form), true, null);
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.method !== "get") return;
    event.preventDefault();
    swap(formUrl(form), true, fragmentOf(form));
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-swap]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    var url = new URL(link.href, window.location.href);
    swap(url.pathname + url.search, true, null, url.hash.slice(1));
  });

  window.addEventListener("hashchange", function () { settle(window.location.hash.slice(1)); });
  settle(window.location.hash.slice(1));

  window.addEventListener("popstate", function () {
    swap(window.location.pathname + window.location.search, false, null);
  });
})();
