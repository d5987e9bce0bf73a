// A static file server for the benchmark page, rooted at this folder (node_modules included),
// with the headers that make the page cross-origin isolated (SharedArrayBuffer, and so
// multi-threaded wasm). Usage: node serve.mjs [port] [models] (default 8731; `models`, a folder
// served as /models/, for the model page: scripts/onnx-models.sh's .onnx/models).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));
const port = Number(process.argv[2] ?? 8731);
const models = process.argv[3] ? resolve(process.argv[3]) : undefined;
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.json': 'application/json', '.onnx': 'application/octet-stream', '.css': 'text/css',
};

createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
  const [base, rest] = models && path.startsWith('/models/') ? [models + sep, path.slice(8)] : [root, path];
  const file = join(base, rest.endsWith('/') ? join(rest, 'index.html') : rest);
  if (!file.startsWith(base)) {
    res.writeHead(403).end();
    return;
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, {
      'Content-Type': types[extname(file)] ?? 'application/octet-stream',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cache-Control': 'no-store',
    });
    res.end(body);
  } catch {
    res.writeHead(404).end(`not found: ${path}`);
  }
}).listen(port, '127.0.0.1', () => console.log(`serving ${root} on http://127.0.0.1:${port}/`));
