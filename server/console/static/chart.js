// A live line chart in SVG: messages per second in and out, the last POINTS samples.

const NS = "http://www.w3.org/2000/svg";
const POINTS = 60;
const WIDTH = 600;
const HEIGHT = 160;
const PAD = 30;

function svg(tag, attrs = {}) {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  return element;
}

export function rateChart(series) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img" });
  const grid = svg("g", { class: "grid" });
  const lines = series.map(({ name, cls }) => {
    const line = svg("polyline", { class: cls, fill: "none" });
    line.append(svg("title"));
    line.firstChild.textContent = name;
    return line;
  });
  const legend = svg("text", { x: PAD, y: 12, class: "legend" });
  root.append(grid, ...lines, legend);
  const samples = series.map(() => []);

  function draw() {
    const top = Math.max(1, ...samples.flat()) * 1.1;
    const x = (i) => PAD + (i * (WIDTH - PAD - 5)) / (POINTS - 1);
    const y = (v) => HEIGHT - PAD / 2 - (v / top) * (HEIGHT - PAD);
    grid.replaceChildren(...[0, 0.5, 1].map((f) => {
      const group = svg("g");
      group.append(svg("line", { x1: PAD, x2: WIDTH - 5, y1: y(top * f), y2: y(top * f) }));
      const label = svg("text", { x: 2, y: y(top * f) + 4 });
      label.textContent = (top * f).toFixed(top < 10 ? 1 : 0);
      group.append(label);
      return group;
    }));
    lines.forEach((line, k) => {
      const offset = POINTS - samples[k].length;
      line.setAttribute("points", samples[k].map((v, i) => `${x(i + offset).toFixed(1)},${y(v).toFixed(1)}`).join(" "));
    });
    legend.textContent = series.map(({ name }, k) => `${name}: ${(samples[k].at(-1) ?? 0).toFixed(1)}/s`).join("   ");
  }

  draw();
  return {
    element: root,
    add(values) {
      values.forEach((value, k) => {
        samples[k].push(value);
        if (samples[k].length > POINTS) samples[k].shift();
      });
      draw();
    },
  };
}

// Polls read() (cumulative counters) every intervalMs and charts their per-second deltas;
// returns stop().
export function sampleRates(chart, read, intervalMs = 2000) {
  let last = null;
  let stopped = false;
  let timer = null;
  async function tick() {
    try {
      const counters = await read();
      const now = performance.now();
      if (last && !stopped) {
        const seconds = (now - last.at) / 1000;
        chart.add(counters.map((value, k) => Math.max(0, value - last.counters[k]) / seconds));
      }
      last = { at: now, counters };
    } catch (_) { /* the next sample may succeed */ }
    if (!stopped) timer = setTimeout(tick, intervalMs);
  }
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
