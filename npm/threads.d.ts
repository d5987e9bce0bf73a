// `unicompute/threads`: the API of `unicompute`, with the CPU backend on Web Workers in
// cross-origin-isolated pages and workers (see threads.js).
export * from './index.js';
