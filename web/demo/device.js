// What `init('auto')` opened, and why: name, backend, the selection's reason, limits, features.
import { init, listDevices } from 'unicompute';

/** Fill the definition list `dl` with the auto device's description. */
export async function showDevice(dl) {
  const rows = [];
  try {
    const device = await init('auto');
    const info = device.info();
    rows.push(['device', `${info.name} (${info.type})`], ['backend', info.backend], ['why', device.selectionReason]);
    if (info.threads) rows.push(['threads', String(info.threads)]);
    const features = Object.entries(info.features).filter(([, on]) => on).map(([f]) => f);
    rows.push(['features', features.length ? features.join(', ') : 'none'], ['max buffer', `${(info.limits.maxBufferSize / 2 ** 20).toFixed(0)} MiB`]);
    const all = await listDevices();
    rows.push(['all devices', all.map((d) => `${d.backend}: ${d.name}`).join('; ')]);
    document.body.dataset.backend = info.backend;
    device.dispose();
  } catch (e) {
    rows.push(['error', `${e.code}: ${e.message}`]);
  }
  dl.replaceChildren(...rows.flatMap(([k, v]) => [Object.assign(document.createElement('dt'), { textContent: k }), Object.assign(document.createElement('dd'), { textContent: v })]));
}
