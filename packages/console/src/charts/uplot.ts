// uPlot and its stylesheet: imported only by chart.tsx's dynamic import, so Vite puts both in
// a file of their own that the first page with a picture loads.
import "uplot/dist/uPlot.min.css";
import uPlot from "uplot";

export { uPlot };
