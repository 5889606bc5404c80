// Theme: follow the system unless the user picked light or dark (kept in localStorage). Loaded in <head>
// so the page never flashes the wrong theme.
"use strict";

(function () {
  const KEY = "piweb-theme";
  const root = document.documentElement;
  const saved = localStorage.getItem(KEY);
  if (saved === "light" || saved === "dark") root.dataset.theme = saved;

  function current() {
    if (root.dataset.theme) return root.dataset.theme;
    return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    const label = () => {
      const dark = current() === "dark";
      button.textContent = dark ? "☀ Light" : "☾ Dark";
      button.setAttribute("aria-label", dark ? "Switch to the light theme" : "Switch to the dark theme");
      button.setAttribute("aria-pressed", String(dark));
    };
    label();
    button.addEventListener("click", () => {
      root.dataset.theme = current() === "dark" ? "light" : "dark";
      localStorage.setItem(KEY, root.dataset.theme);
      label();
    });
  });
})();
