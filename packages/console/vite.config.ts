import { defineConfig } from "vite";

// Preact through esbuild's automatic JSX runtime: no framework plugin needed. The controller
// serves dist/ under /console/, so every asset URL starts there.
export default defineConfig({
  base: "/console/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // The controller's security policy allows no inline script or style: keep everything in files.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
