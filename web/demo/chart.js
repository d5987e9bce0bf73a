// A grouped bar chart on a canvas: one group per workload, one bar per engine, the height the
// median milliseconds on a log scale (the workloads differ by orders of magnitude).
const COLOURS = ['#3b5bdb', '#2b8a3e', '#e8590c', '#862e9c'];

/** Draw `results` ({ workload: { engine: { ms } | { error } } }) for `engines` on `canvas`. */
export function drawBars(canvas, results, engines) {
  const g = canvas.getContext('2d');
  const [w, h, left, bottom, top] = [canvas.width, canvas.height, 56, 40, 34];
  g.clearRect(0, 0, w, h);
  g.font = '12px system-ui, sans-serif';
  const all = Object.values(results).flatMap((r) => Object.values(r).map((x) => x.ms).filter((ms) => ms > 0));
  if (all.length === 0) return;
  const lo = Math.floor(Math.log10(Math.min(...all) / 2)), hi = Math.ceil(Math.log10(Math.max(...all))) + (all.length === 1 ? 1 : 0);
  const y = (ms) => h - bottom - ((Math.log10(ms) - lo) / Math.max(hi - lo, 1)) * (h - bottom - top);
  g.strokeStyle = '#e3e6ee';
  g.fillStyle = '#5c6478';
  for (let e = lo; e <= hi; e++) {
    g.beginPath();
    g.moveTo(left, y(10 ** e));
    g.lineTo(w - 8, y(10 ** e));
    g.stroke();
    g.fillText(`${10 ** e} ms`, 4, y(10 ** e) + 4);
  }
  const workloads = Object.keys(results);
  const groupW = (w - left - 8) / workloads.length, barW = (groupW - 12) / engines.length;
  workloads.forEach((wl, i) => {
    engines.forEach((engine, j) => {
      const r = results[wl][engine];
      if (!r?.ms) return;
      g.fillStyle = COLOURS[j % COLOURS.length];
      const x = left + i * groupW + 6 + j * barW;
      g.fillRect(x, y(r.ms), barW - 2, h - bottom - y(r.ms));
    });
    g.fillStyle = '#1d2330';
    g.fillText(wl, left + i * groupW + 6, h - bottom + 16);
  });
  engines.forEach((engine, j) => {
    g.fillStyle = COLOURS[j % COLOURS.length];
    g.fillRect(left + j * 170, 8, 12, 12);
    g.fillStyle = '#1d2330';
    g.fillText(engine, left + j * 170 + 16, 18);
  });
}
