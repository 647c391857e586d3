import { useEffect, useRef, useState } from "preact/hooks";

export interface Series {
  label: string;
  values: (number | null)[];
  /** A CSS colour or variable name (`--ok`), read from the theme when drawn. */
  color: string;
  dash?: boolean;
}

export interface ChartProps {
  /** What the picture shows, for screen readers (the numbers are in the table beside it). */
  label: string;
  /** `steps`: lines that hold their value until the next x (a state over time). */
  kind: "lines" | "bars" | "steps";
  /** x values: seconds since the epoch for lines and steps, 0..n-1 for bars (named by `xLabels`). */
  x: number[];
  xLabels?: string[];
  /** A fixed y range and named y ticks (a timeline's lanes) instead of counts from 0. */
  yRange?: [number, number];
  yTicks?: { value: number; label: string }[];
  series: Series[];
  height?: number;
  testId?: string;
}

const color = (c: string) => (c.startsWith("--") ? getComputedStyle(document.documentElement).getPropertyValue(c).trim() || "#888" : c);

/**
 * A uPlot chart, loaded on first use (its own file, not in the console's first load). The canvas
 * is an image to assistive technology (`role="img"` with the label); the numbers it draws are
 * in the table each picture has beside it, and in `data-points` (what uPlot was given).
 */
export function Chart(props: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  const points = JSON.stringify({ x: props.x, series: props.series.map((s) => ({ label: s.label, values: s.values })) });
  useEffect(() => {
    let plot: { destroy(): void; setSize(s: { width: number; height: number }): void } | null = null;
    let stopped = false;
    const el = box.current;
    if (!el || props.x.length === 0) return;
    const height = props.height ?? 220;
    // The grid around a picture settles after it is drawn (the picture beside it loads later).
    const resize = new ResizeObserver(() => plot?.setSize({ width: el.clientWidth, height }));
    import("./uplot.js")
      .then(({ uPlot }) => {
        if (stopped) return;
        const axisStroke = color("--muted");
        const grid = { stroke: color("--line"), width: 1 };
        const bars = props.kind === "bars" ? uPlot.paths.bars?.({ size: [0.6, 80] }) : undefined;
        const steps = props.kind === "steps" ? uPlot.paths.stepped?.({ align: 1 }) : undefined;
        const yRange = props.yRange;
        const yTicks = props.yTicks;
        plot = new uPlot(
          {
            width: el.clientWidth,
            height,
            legend: { show: props.series.length > 1, live: false },
            cursor: { show: props.kind !== "bars" },
            scales: {
              x: props.kind === "bars" ? { time: false, range: [-0.5, props.x.length - 0.5] } : { time: true },
              y: { range: yRange ? () => yRange : (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
            },
            axes: [
              {
                stroke: axisStroke,
                grid,
                ...(props.kind === "bars"
                  ? { splits: () => props.x, values: (_u: unknown, splits: number[]) => splits.map((i) => props.xLabels?.[i] ?? String(i)) }
                  : {}),
              },
              yTicks
                ? {
                    stroke: axisStroke,
                    grid,
                    size: 120,
                    splits: () => yTicks.map((t) => t.value),
                    values: (_u: unknown, splits: number[]) => splits.map((v) => yTicks.find((t) => t.value === v)?.label ?? ""),
                  }
                : { stroke: axisStroke, grid },
            ],
            series: [
              {},
              ...props.series.map((s) => ({
                label: s.label,
                stroke: color(s.color),
                width: 2,
                ...(s.dash ? { dash: [6, 4] } : {}),
                ...(bars ? { paths: bars, fill: color(s.color), points: { show: false } } : {}),
                ...(steps ? { paths: steps, points: { show: false } } : {}),
              })),
            ],
          },
          [props.x, ...props.series.map((s) => s.values)],
          el,
        );
        resize.observe(el);
      })
      .catch((e: Error) => setError(e.message));
    return () => {
      stopped = true;
      resize.disconnect();
      plot?.destroy();
    };
  }, [points, props.kind, props.height, JSON.stringify(props.yTicks ?? null)]);
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={props.label} data-testid={props.testId} data-points={points} />
      {error ? <p class="error">The chart could not be drawn: {error}</p> : null}
    </figure>
  );
}
