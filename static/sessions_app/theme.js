// @ts-check
// Theme: follow the system unless the user picked light or dark (kept in localStorage; theme_boot.js
// applies it before the first paint). This module runs the toggle button in the top bar.
export const THEME_KEY = "piweb-theme";
const root = document.documentElement;

function current() {
  if (root.dataset.theme) return root.dataset.theme;
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

const button = document.getElementById("theme-toggle");
if (button) {
  const label = () => {
    const dark = current() === "dark";
    button.textContent = dark ? "☀ Light" : "☾ Dark";
    button.setAttribute("aria-label", dark ? "Switch to the light theme" : "Switch to the dark theme");
    button.setAttribute("aria-pressed", String(dark));
  };
  label();
  button.addEventListener("click", () => {
    root.dataset.theme = current() === "dark" ? "light" : "dark";
    localStorage.setItem(THEME_KEY, root.dataset.theme);
    label();
  });
}
