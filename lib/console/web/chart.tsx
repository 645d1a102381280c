/**
 * Charts with Chart.js (only the parts used are registered, to keep the bundle small). Every chart
 * is a labelled image for screen readers and is always shown with a table of the same figures.
 */
import { useEffect, useRef } from "preact/hooks";
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip, type ChartConfiguration } from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);
Chart.defaults.font.family = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
Chart.defaults.animation = false;

export const PALETTE = ["#1f5fbf", "#d9730d", "#2e8540", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b7950b", "#5b3a29", "#e377c2", "#17becf", "#393b79"];

export interface Series {
  label: string;
  values: (number | null)[];
}

export function BarChart(props: { label: string; categories: string[]; series: Series[]; stacked?: boolean; money?: string; id?: string }) {
  return <ChartCanvas label={props.label} id={props.id} config={barConfig(props)} />;
}

export function LineChart(props: { label: string; categories: string[]; series: Series[]; percent?: boolean; id?: string }) {
  const config: ChartConfiguration = {
    type: "line",
    data: { labels: props.categories, datasets: props.series.map((s, i) => ({ label: s.label, data: s.values, borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length], tension: 0.2 })) },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: { y: { beginAtZero: true, ...(props.percent ? { max: 1, ticks: { callback: (v) => `${Math.round(Number(v) * 100)}%` } } : {}) } },
      plugins: { legend: { position: "bottom" } },
    },
  };
  return <ChartCanvas label={props.label} id={props.id} config={config} />;
}

function barConfig(props: { categories: string[]; series: Series[]; stacked?: boolean; money?: string }): ChartConfiguration {
  const currency = props.money;
  const fmt = currency ? new Intl.NumberFormat(navigator.language, { style: "currency", currency, notation: "compact" }) : null;
  return {
    type: "bar",
    data: { labels: props.categories, datasets: props.series.map((s, i) => ({ label: s.label, data: s.values, backgroundColor: PALETTE[i % PALETTE.length] })) },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: { x: { stacked: !!props.stacked }, y: { stacked: !!props.stacked, beginAtZero: true, ticks: fmt ? { callback: (v) => fmt.format(Number(v)) } : {} } },
      plugins: { legend: { position: "bottom" } },
    },
  };
}

function ChartCanvas(props: { label: string; config: ChartConfiguration; id?: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, props.config);
    return () => chart.destroy();
  }, [JSON.stringify(props.config.data), props.config.type]);
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label={props.label} id={props.id}>
        {props.label}
      </canvas>
    </div>
  );
}
