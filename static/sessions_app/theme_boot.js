// @ts-check
// The saved theme is applied before the first paint: a classic script in <head>, the one file that is not
// a module (modules run after parsing, too late to avoid a flash). The toggle button is theme.js.
"use strict";
(function () {
  const saved = localStorage.getItem("piweb-theme");
  if (saved === "light" || saved === "dark") document.documentElement.dataset.theme = saved;
})();
