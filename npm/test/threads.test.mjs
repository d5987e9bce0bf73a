// `unicompute/threads` in headless Chromium: serves the installed package and threads.html
// as ES modules, cross-origin isolated (COOP + COEP), and checks that the CPU backend runs on
// the asked number of Web Workers and gives exactly the numbers of the one-thread build.
// Usage: node threads.test.mjs (in the project that installed the package). Run by
// scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';

const root = process.cwd();
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = createServer(async (req, res) => {
  const file = join(root, normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)));
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
}).listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
try {
  for (const threads of [2, 3]) {
    const page = await browser.newPage();
    const logs = [];
    page.on('console', (m) => logs.push(m.text()));
    page.on('pageerror', (e) => logs.push(e.message));
    await page.goto(`http://127.0.0.1:${server.address().port}/threads.html?threads=${threads}`);
    await page.waitForSelector('body[data-done="yes"]', { timeout: 120_000 });
    const r = await page.evaluate(() => ({ ...document.body.dataset }));
    assert.equal(r.error, undefined, `${r.error}\n${logs.join('\n')}`);
    assert.equal(r.isolated, 'true');
    assert.equal(r.single, '1', 'the one-thread build runs on one thread');
    assert.equal(r.multi, String(threads), `unicompute/threads runs on ${threads} threads`);
    assert.equal(r.diffs, '', `outputs that differ between one and ${threads} threads: ${r.diffs}`);
    console.log(`threads: ${r.cases} identical on 1 and ${threads} threads`);
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
