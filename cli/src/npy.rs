//! `.npy` files (numpy's array format, version 1.0, C order) read into tensors and written
//! from them: `unicompute run`'s `--input` and `--save`.

use std::path::Path;

use unicompute::{DType, Device, Error, Result, Tensor};

/// A `.npy` file (little-endian f4, f8, i4 or i8, C order) as a tensor; f8 becomes f32.
pub fn read(device: &Device, path: &Path) -> Result<Tensor> {
    let bad = |why: &str| Error::Invalid(format!("{}: {why}", path.display()));
    let bytes = std::fs::read(path).map_err(|e| bad(&e.to_string()))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (len_at, len_size) = if bytes[6] == 1 { (8, 2) } else { (8, 4) };
    let header_len = bytes[len_at..len_at + len_size]
        .iter()
        .rev()
        .fold(0usize, |n, &b| n * 256 + b as usize);
    let start = len_at + len_size;
    let header = bytes
        .get(start..start + header_len)
        .map(String::from_utf8_lossy)
        .ok_or_else(|| bad("its header is cut short"))?;
    if header.contains("'fortran_order': True") {
        return Err(bad("Fortran order is not supported; save it in C order"));
    }
    let shape = npy_shape(&header).ok_or_else(|| bad("its header has no shape"))?;
    let data = &bytes[start + header_len..];
    let n: usize = shape.iter().product();
    let take = |size: usize| {
        data.get(..n * size)
            .ok_or_else(|| bad("its data is cut short"))
    };
    let descr = ["<f4", "<f8", "<i4", "<i8"]
        .into_iter()
        .find(|d| header.contains(d));
    match descr {
        Some("<f4") => Tensor::from_slice(device, &decode(take(4)?, f32::from_le_bytes), &shape),
        Some("<f8") => {
            let v: Vec<f32> = decode(take(8)?, f64::from_le_bytes)
                .iter()
                .map(|&x| x as f32)
                .collect();
            Tensor::from_slice(device, &v, &shape)
        }
        Some("<i4") => Tensor::from_slice(device, &decode(take(4)?, i32::from_le_bytes), &shape),
        Some("<i8") => Tensor::from_slice(device, &decode(take(8)?, i64::from_le_bytes), &shape),
        _ => Err(bad("its dtype is not <f4, <f8, <i4 or <i8")),
    }
}

/// Little-endian values of `N` bytes each.
fn decode<T, const N: usize>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0; N];
            a.copy_from_slice(c);
            f(a)
        })
        .collect()
}

/// The `'shape': (…)` tuple of a `.npy` header.
fn npy_shape(header: &str) -> Option<Vec<usize>> {
    let at = header.find("'shape':")?;
    let rest = &header[at..];
    let tuple = &rest[rest.find('(')? + 1..rest.find(')')?];
    tuple
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

/// Writes `t` to `path` as a `.npy` file: f32 (16-bit floats widened), i64, i32 or u32.
pub fn write(path: &Path, t: &Tensor) -> Result<()> {
    let (descr, data): (&str, Vec<u8>) = match t.dtype() {
        DType::I64 => ("<i8", bytes(t.to_vec_blocking::<i64>()?, i64::to_le_bytes)),
        DType::I32 => ("<i4", bytes(t.to_vec_blocking::<i32>()?, i32::to_le_bytes)),
        DType::U32 => ("<u4", bytes(t.to_vec_blocking::<u32>()?, u32::to_le_bytes)),
        _ => {
            let v = t.cast(DType::F32)?.to_vec_blocking::<f32>()?;
            ("<f4", bytes(v, f32::to_le_bytes))
        }
    };
    let shape: String = t.shape().iter().map(|n| format!("{n}, ")).collect();
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({shape}), }}");
    // Magic (6), version (2) and length (2), then the header padded to 64 bytes with a newline.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend((header.len() as u16).to_le_bytes());
    file.extend(header.as_bytes());
    file.extend(data);
    std::fs::write(path, file).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
}

/// Values as their little-endian bytes.
fn bytes<T, const N: usize>(values: Vec<T>, f: fn(T) -> [u8; N]) -> Vec<u8> {
    values.into_iter().flat_map(f).collect()
}
