// NumPy's .npy files (format versions 1 to 3, little-endian, C order), read into
// onnxruntime-web's element types, and tensors' raw bytes passed as base64 text: the model page
// (models.js) reads the inputs with them, the driver (run-models.mjs, in Node) the expected
// outputs and the outputs the page sends back. Nothing here needs a DOM.

/** Each .npy `descr` as onnxruntime-web's element type and the typed array that holds it. */
const DTYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<f2': ['float16', Uint16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '|b1': ['bool', Uint8Array],
  '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array],
  '<u4': ['uint32', Uint32Array],
  '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array],
};

/** The typed array of each element type (float16 as its bits, bool as bytes). */
export const ARRAYS = Object.fromEntries(Object.values(DTYPES));

/**
 * A .npy file's bytes (ArrayBuffer or Uint8Array) as `{ type, dims, data }`: the element type
 * by onnxruntime-web's name, the shape and the elements in a typed array of their own.
 */
export function parseNpy(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const magic = String.fromCharCode(...u8.subarray(0, 6));
  if (magic !== '\x93NUMPY') throw new Error('not a .npy file: expected the magic \\x93NUMPY');
  const major = u8[6];
  if (major < 1 || major > 3) throw new Error(`.npy format version ${major}: expected 1, 2 or 3`);
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const [size, start] = major === 1 ? [view.getUint16(8, true), 10] : [view.getUint32(8, true), 12];
  const header = new TextDecoder().decode(u8.subarray(start, start + size));
  const field = (key) => header.match(new RegExp(`'${key}':\\s*(\\([^)]*\\)|[^,]+?)\\s*,`))?.[1];
  const descr = field('descr')?.replace(/'/g, '');
  if (!DTYPES[descr]) throw new Error(`.npy element type ${descr}: expected one of ${Object.keys(DTYPES).join(', ')}`);
  if (field('fortran_order') !== 'False') throw new Error('.npy in Fortran order: expected C order');
  const dims = [...(field('shape') ?? '').matchAll(/\d+/g)].map((m) => Number(m[0]));
  const [type, Typed] = DTYPES[descr];
  const count = dims.reduce((a, b) => a * b, 1);
  const body = new Uint8Array(u8.subarray(start + size, start + size + count * Typed.BYTES_PER_ELEMENT)); // a copy, aligned
  if (body.length !== count * Typed.BYTES_PER_ELEMENT) throw new Error(`.npy of shape [${dims}] is cut short`);
  return { type, dims, data: new Typed(body.buffer) };
}

/** A typed array's bytes as base64 text. */
export function toBase64(data) {
  const u8 = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let text = '';
  for (let i = 0; i < u8.length; i += 0x8000) text += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(text);
}

/** Base64 text of the elements of `type` (as toBase64 wrote them) as their typed array. */
export function fromBase64(type, text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new ARRAYS[type](bytes.buffer);
}

/** An IEEE half's bits as the number. */
function half(bits) {
  const exp = (bits >> 10) & 0x1f, frac = bits & 0x3ff, sign = bits & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** The elements of a tensor of `type` as numbers (float16 bits decoded, integers as Number). */
export function numbers(type, data) {
  return type === 'float16' ? Array.from(data, half) : Array.from(data, Number);
}
