// webpack 5: the app bundled as an ES module for the browser, the wasm emitted as an asset.
const path = require('node:path');

module.exports = {
  mode: 'production',
  entry: './webpack.js',
  output: { path: path.resolve(__dirname, 'dist-webpack'), filename: 'main.js', publicPath: '' },
  target: 'web',
  performance: { hints: false },
};
