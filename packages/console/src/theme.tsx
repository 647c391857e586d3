import { useEffect, useState } from "preact/hooks";

type Theme = "light" | "dark";
const STORAGE = "rlc.theme";

function initial(): Theme {
  const saved = localStorage.getItem(STORAGE);
  if (saved === "light" || saved === "dark") return saved;
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Light or dark, remembered per browser (a preference, not a secret: localStorage is fine). */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(initial);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const next = theme === "dark" ? "light" : "dark";
  return (
    <button
      type="button"
      aria-label={`Switch to ${next} theme`}
      onClick={() => {
        localStorage.setItem(STORAGE, next);
        setTheme(next);
      }}
    >
      {theme === "dark" ? "Light" : "Dark"}
    </button>
  );
}
