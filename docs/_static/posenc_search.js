// Search excerpts for a site read from disk.  Sphinx's search fetches each
// result page to show an excerpt, and browsers refuse fetch() on file://
// URLs; on the search page of such a site this hands it the page texts that
// the build wrote into _static/posenc_pages.js instead.
(function () {
  "use strict";
  if (window.location.protocol !== "file:") return;
  if (!/search\.html$/.test(window.location.pathname)) return;
  const root = document.documentElement.dataset.content_root || "./";
  const ready = new Promise((resolve) => {
    const script = document.createElement("script");
    script.src = root + "_static/posenc_pages.js";
    script.onload = () => resolve(window.POSENC_PAGES || {});
    script.onerror = () => resolve({});
    document.head.appendChild(script);
  });
  const original = window.fetch ? window.fetch.bind(window) : null;
  window.fetch = function (url, options) {
    let key = String(url).split("#")[0];
    if (key.startsWith(root)) key = key.slice(root.length);
    return ready.then((pages) => {
      if (Object.prototype.hasOwnProperty.call(pages, key)) {
        const html = '<div role="main">' + pages[key] + "</div>";
        return new Response(html, { headers: { "Content-Type": "text/html" } });
      }
      return original ? original(url, options) : Promise.reject(new Error("offline"));
    });
  };
})();
