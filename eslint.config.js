// Lint for the browser modules under static/ and their unit tests under tests/js (`make lint`).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["**/node_modules/**", "staticfiles/**", "bench/**", "tests/ui/axe/**", ".venv/**", "static/vendor/**"] },
  js.configs.recommended,
  {
    files: ["static/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser } },
    rules: {
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
      "no-implicit-globals": "error",
      "no-restricted-globals": ["error", { name: "Pi", message: "Import what you need: there is no window.Pi." }],
      "no-restricted-properties": ["error", { object: "window", property: "Pi", message: "There is no window.Pi." }],
      eqeqeq: ["error", "smart"],
      "prefer-const": "error",
      "no-shadow": "error",
      "no-var": "error",
    },
  },
  {
    // Loaded in <head> as a classic script so the page never paints in the wrong theme.
    files: ["static/sessions_app/theme_boot.js"],
    languageOptions: { sourceType: "script" },
  },
  {
    // The Pi package runs in Pi's Node process, not in a page.
    files: ["tests/js/**/*.js", "clients/pi-piweb/**/*.js", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
];
