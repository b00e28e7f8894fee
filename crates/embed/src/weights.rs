//! Reading and writing model weights in the safetensors format.
//!
//! A safetensors file is a JSON header (names, dtypes, shapes, byte ranges)
//! followed by raw little-endian tensor data; the `safetensors` crate
//! parses and writes it. The file is mapped, not read (`mapped`): a tensor
//! comes out as [`Floats`] read in place when it is stored as f32, else as
//! values widened from f16 or bf16, or transposed into a buffer of its own
//! for the multiply. Tensors are looked up by their Hugging Face names
//! under an optional prefix — all the encoders need, without a tensor
//! library.

use std::path::Path;
use std::sync::Arc;

use safetensors::{Dtype, SafeTensors};

use crate::mapped::Bytes;
pub use crate::mapped::{Floats, Halves};
use crate::{EmbedError, EmbedResult};

/// The tensors of one safetensors file, kept as the file's bytes (mapped
/// when read from a file).
pub struct Weights {
    bytes: Arc<Bytes>,
    origin: String,
}

/// A view of [`Weights`] under a name prefix (`encoder.layer.0.` …).
#[derive(Clone)]
pub struct Scope<'a> {
    tensors: &'a SafeTensors<'a>,
    bytes: &'a Arc<Bytes>,
    origin: &'a str,
    prefix: String,
}

impl Weights {
    /// Takes the bytes of a safetensors file; `origin` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, origin: impl Into<String>) -> EmbedResult<Self> {
        Self::checked(Bytes::Owned(bytes), origin.into())
    }

    /// Maps a safetensors file. Only the header is read now; tensor data is
    /// read from the page cache when it is used.
    pub fn read(path: &Path) -> EmbedResult<Self> {
        let bytes = Bytes::map(path)
            .map_err(|error| EmbedError::ModelMissing(format!("reading {}: {error}", path.display())))?;
        Self::checked(bytes, path.display().to_string())
    }

    /// Maps a safetensors file every use reads whole, with all its pages
    /// entered into the mapping now ([`Bytes::map_populated`]).
    pub fn read_whole(path: &Path) -> EmbedResult<Self> {
        let bytes = Bytes::map_populated(path)
            .map_err(|error| EmbedError::ModelMissing(format!("reading {}: {error}", path.display())))?;
        Self::checked(bytes, path.display().to_string())
    }

    fn checked(bytes: Bytes, origin: String) -> EmbedResult<Self> {
        SafeTensors::deserialize(&bytes)
            .map_err(|error| EmbedError::ModelInvalid(format!("{origin} is not a safetensors file: {error}")))?;
        Ok(Self { bytes: Arc::new(bytes), origin })
    }

    /// Runs `read` over the parsed tensors (the parse borrows the bytes, so
    /// the view cannot outlive this call; [`Floats`] taken from it can).
    pub fn with<T>(&self, read: impl FnOnce(Scope<'_>) -> EmbedResult<T>) -> EmbedResult<T> {
        let tensors = SafeTensors::deserialize(&self.bytes)
            .map_err(|error| EmbedError::ModelInvalid(format!("{}: {error}", self.origin)))?;
        read(Scope { tensors: &tensors, bytes: &self.bytes, origin: &self.origin, prefix: String::new() })
    }
}

impl<'a> Scope<'a> {
    fn full_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Whether a tensor of that name (under this scope) exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.tensor(&self.full_name(name)).is_ok()
    }

    /// The scope `name.` under this one.
    pub fn pp(&self, name: &str) -> Scope<'a> {
        Scope {
            tensors: self.tensors,
            bytes: self.bytes,
            origin: self.origin,
            prefix: format!("{}{name}.", self.prefix),
        }
    }

    /// The tensor `name`, checked to have `shape`.
    fn view(&self, shape: &[usize], name: &str) -> EmbedResult<(String, safetensors::tensor::TensorView<'a>)> {
        let full = self.full_name(name);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| EmbedError::ModelInvalid(format!("{} has no tensor {full}", self.origin)))?;
        if view.shape() != shape {
            return Err(EmbedError::ModelInvalid(format!(
                "{}: tensor {full} has shape {:?}, expected {shape:?}",
                self.origin,
                view.shape()
            )));
        }
        Ok((full, view))
    }

    /// The tensor `name` as f32 values in row-major order, checked to have
    /// `shape`, in a buffer of their own.
    pub fn get(&self, shape: &[usize], name: &str) -> EmbedResult<Vec<f32>> {
        let (full, view) = self.view(shape, name)?;
        widen(view.dtype(), view.data())
            .map_err(|problem| EmbedError::ModelInvalid(format!("{}: tensor {full}: {problem}", self.origin)))
    }

    /// The tensor `name` as f32 values in row-major order, checked to have
    /// `shape`: read in place from the file when it is stored as f32 (no
    /// copy; pages are read when used), else widened.
    pub fn floats(&self, shape: &[usize], name: &str) -> EmbedResult<Floats> {
        let (full, view) = self.view(shape, name)?;
        if view.dtype() == Dtype::F32
            && let Some(floats) =
                self.offset(view.data()).and_then(|start| Floats::in_place(self.bytes, start, view.data().len() / 4))
        {
            return Ok(floats);
        }
        widen(view.dtype(), view.data())
            .map(Floats::from)
            .map_err(|problem| EmbedError::ModelInvalid(format!("{}: tensor {full}: {problem}", self.origin)))
    }

    /// Where a tensor's `data` starts in the file: the view borrows these
    /// bytes (see `with`), so the subtraction is its offset.
    fn offset(&self, data: &[u8]) -> Option<usize> {
        (data.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)
    }

    /// The f16 tensor `name` as its values' bits in row-major order,
    /// checked to have `shape`: read in place from the file (no copy),
    /// else copied when the platform cannot view the bytes in place.
    pub fn halves(&self, shape: &[usize], name: &str) -> EmbedResult<Halves> {
        let (full, view) = self.view(shape, name)?;
        if view.dtype() != Dtype::F16 {
            return Err(EmbedError::ModelInvalid(format!(
                "{}: tensor {full} is {:?}, expected F16",
                self.origin,
                view.dtype()
            )));
        }
        if let Some(halves) =
            self.offset(view.data()).and_then(|start| Halves::in_place(self.bytes, start, view.data().len() / 2))
        {
            return Ok(halves);
        }
        Ok(Halves::from(view.data().chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect::<Vec<u16>>()))
    }

    /// A `[rows, cols]` matrix stored transposed: `[cols, rows]` row-major
    /// (PyTorch keeps linear weights as `[out, in]`; the multiply wants
    /// `[in, out]`).
    pub fn get_transposed(&self, rows: usize, cols: usize, name: &str) -> EmbedResult<Vec<f32>> {
        let mut out = vec![0.0_f32; rows * cols];
        self.transpose_into(rows, cols, name, &mut out, rows, 0)?;
        Ok(out)
    }

    /// Writes the `[rows, cols]` matrix `name` transposed into `out`:
    /// element (r, c) goes to `out[c · out_stride + out_offset + r]`, so
    /// several matrices with the same `cols` can sit side by side in one
    /// `[cols, out_stride]` buffer (MiniLM's fused query, key and value).
    pub fn transpose_into(
        &self,
        rows: usize,
        cols: usize,
        name: &str,
        out: &mut [f32],
        out_stride: usize,
        out_offset: usize,
    ) -> EmbedResult<()> {
        if out_offset + rows > out_stride || out.len() < cols * out_stride {
            return Err(EmbedError::ModelInvalid(format!(
                "{}: no room for tensor {} transposed ({rows}×{cols} at column {out_offset} of a {}×{out_stride} buffer)",
                self.origin,
                self.full_name(name),
                out.len() / out_stride.max(1)
            )));
        }
        let values = self.floats(&[rows, cols], name)?;
        transpose(&values, rows, cols, out, out_stride, out_offset);
        Ok(())
    }
}

/// `out[c · out_stride + out_offset + r] = values[r · cols + c]`, in square
/// tiles so both sides stay in cache (a plain double loop writes one value
/// per cache line and ran at a fraction of memory speed).
pub(crate) fn transpose(
    values: &[f32],
    rows: usize,
    cols: usize,
    out: &mut [f32],
    out_stride: usize,
    out_offset: usize,
) {
    const TILE: usize = 16;
    for row_start in (0..rows).step_by(TILE) {
        let row_end = (row_start + TILE).min(rows);
        for col_start in (0..cols).step_by(TILE) {
            let col_end = (col_start + TILE).min(cols);
            for c in col_start..col_end {
                let line = &mut out[c * out_stride + out_offset + row_start..c * out_stride + out_offset + row_end];
                for (slot, r) in line.iter_mut().zip(row_start..row_end) {
                    *slot = values[r * cols + c];
                }
            }
        }
    }
}

/// Little-endian tensor bytes as f32 values.
fn widen(dtype: Dtype, data: &[u8]) -> Result<Vec<f32>, String> {
    match dtype {
        Dtype::F32 => Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()),
        Dtype::BF16 => Ok(data
            .chunks_exact(2)
            .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
            .collect()),
        Dtype::F16 => Ok(data.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect()),
        other => Err(format!("dtype {other:?} is not supported (f32, f16 or bf16)")),
    }
}

/// IEEE half precision to single precision, exactly (subnormals included).
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        // Subnormal: value = mantissa · 2^-24, exact in f32.
        (0, m) => (m as f32 * f32::powi(2.0, -24)).to_bits(),
        (0x1f, 0) => 0x7f80_0000,
        (0x1f, m) => 0x7f80_0000 | (m << 13),
        (e, m) => ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// Values of a tensor to write: f32, or f16 as their bits.
#[derive(Debug, Clone, Copy)]
pub enum Data<'a> {
    /// f32 values.
    F32(&'a [f32]),
    /// f16 values, as their bits.
    F16(&'a [u16]),
}

impl Data<'_> {
    fn len(self) -> usize {
        match self {
            Self::F32(values) => values.len(),
            Self::F16(values) => values.len(),
        }
    }

    fn dtype(self) -> Dtype {
        match self {
            Self::F32(_) => Dtype::F32,
            Self::F16(_) => Dtype::F16,
        }
    }

    fn le_bytes(self) -> Vec<u8> {
        match self {
            Self::F32(values) => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Self::F16(values) => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}

/// Writes f32 tensors (name, shape, row-major values) as a safetensors
/// file.
pub fn write_f32(path: &Path, tensors: &[(&str, Vec<usize>, &[f32])]) -> EmbedResult<()> {
    let tensors: Vec<(&str, Vec<usize>, Data<'_>)> =
        tensors.iter().map(|(name, shape, values)| (*name, shape.clone(), Data::F32(values))).collect();
    write(path, &tensors)
}

/// Writes tensors (name, shape, row-major values) as a safetensors file.
pub fn write(path: &Path, tensors: &[(&str, Vec<usize>, Data<'_>)]) -> EmbedResult<()> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, _, data)| data.le_bytes()).collect();
    let mut views = Vec::with_capacity(tensors.len());
    for ((name, shape, data), bytes) in tensors.iter().zip(&bytes) {
        if shape.iter().product::<usize>() != data.len() {
            return Err(EmbedError::Inference(format!("tensor {name}: {} values for shape {shape:?}", data.len())));
        }
        let view = safetensors::tensor::TensorView::new(data.dtype(), shape.clone(), bytes)
            .map_err(|error| EmbedError::Inference(format!("tensor {name}: {error}")))?;
        views.push((name.to_string(), view));
    }
    let encoded = safetensors::serialize(views, None)
        .map_err(|error| EmbedError::Inference(format!("encoding {}: {error}", path.display())))?;
    std::fs::write(path, encoded)
        .map_err(|error| EmbedError::ModelMissing(format!("writing {}: {error}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let table = [1.0_f32, -2.5, 3.25, 0.0, 1e-7, f32::MAX];
        write_f32(&path, &[("bert.embeddings.weight", vec![2, 3], &table), ("bias", vec![1], &[0.5])]).unwrap();
        let weights = Weights::read(&path).unwrap();
        weights
            .with(|root| {
                let bert = root.pp("bert");
                assert!(bert.contains("embeddings.weight"));
                assert!(!root.contains("embeddings.weight"));
                assert_eq!(bert.get(&[2, 3], "embeddings.weight")?, table);
                assert_eq!(bert.get_transposed(2, 3, "embeddings.weight")?, [1.0, 0.0, -2.5, 1e-7, 3.25, f32::MAX]);
                let wrong = bert.get(&[3, 2], "embeddings.weight").unwrap_err().to_string();
                assert!(wrong.contains("shape [2, 3], expected [3, 2]"), "{wrong}");
                let missing = root.get(&[1], "nope").unwrap_err().to_string();
                assert!(missing.contains("no tensor nope"), "{missing}");
                assert_eq!(root.get(&[1], "bias")?, [0.5]);
                Ok(())
            })
            .unwrap();
    }

    /// The transpose as the loader wrote it before tiling: one value at a
    /// time, the reference the tiled one must equal.
    fn transposed_plainly(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
        let mut out = vec![0.0_f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = values[r * cols + c];
            }
        }
        out
    }

    #[test]
    fn mapped_tensors_read_in_place_and_transpose_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        // Sizes that are not multiples of the tile, and values whose bits
        // differ everywhere (so a misplaced one shows).
        let shapes = [(37_usize, 21_usize), (16, 16), (1, 50), (50, 1), (33, 48)];
        let tables: Vec<Vec<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(t, &(r, c))| (0..r * c).map(|i| (t * 10_000 + i) as f32 * 0.37 - 1.0).collect())
            .collect();
        let names: Vec<String> = (0..shapes.len()).map(|t| format!("m{t}")).collect();
        let entries: Vec<(&str, Vec<usize>, &[f32])> = names
            .iter()
            .zip(&shapes)
            .zip(&tables)
            .map(|((name, &(r, c)), table)| (name.as_str(), vec![r, c], table.as_slice()))
            .collect();
        write_f32(&path, &entries).unwrap();
        let weights = Weights::read(&path).unwrap();
        weights
            .with(|root| {
                for ((name, &(r, c)), table) in names.iter().zip(&shapes).zip(&tables) {
                    let floats = root.floats(&[r, c], name)?;
                    assert!(floats.is_in_place(), "{name} was copied");
                    assert_eq!(floats.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), bits(table));
                    assert_eq!(bits(&root.get_transposed(r, c, name)?), bits(&transposed_plainly(table, r, c)));
                }
                // Two matrices side by side, as the fused query/key/value.
                let (r, c) = shapes[0];
                let mut fused = vec![f32::NAN; c * 2 * r];
                root.transpose_into(r, c, "m0", &mut fused, 2 * r, 0)?;
                root.transpose_into(r, c, "m0", &mut fused, 2 * r, r)?;
                let plain = transposed_plainly(&tables[0], r, c);
                for line in 0..c {
                    assert_eq!(bits(&fused[line * 2 * r..line * 2 * r + r]), bits(&plain[line * r..(line + 1) * r]));
                    assert_eq!(
                        bits(&fused[line * 2 * r + r..(line + 1) * 2 * r]),
                        bits(&plain[line * r..(line + 1) * r])
                    );
                }
                let no_room = root.transpose_into(r, c, "m0", &mut fused, 2 * r, r + 1).unwrap_err().to_string();
                assert!(no_room.contains("no room"), "{no_room}");
                Ok(())
            })
            .unwrap();
    }

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn half_precision_tensors_are_widened_not_viewed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("half.safetensors");
        let data: Vec<u8> = [0x3c00_u16, 0xc000].iter().flat_map(|v| v.to_le_bytes()).collect();
        let view = safetensors::tensor::TensorView::new(Dtype::F16, vec![2], &data).unwrap();
        std::fs::write(&path, safetensors::serialize([("h", view)], None).unwrap()).unwrap();
        let weights = Weights::read(&path).unwrap();
        let floats = weights.with(|root| root.floats(&[2], "h")).unwrap();
        assert!(!floats.is_in_place());
        assert_eq!(&*floats, &[1.0, -2.0]);
    }

    #[test]
    fn garbage_is_not_taken_for_weights() {
        let error = Weights::from_bytes(b"not a safetensors file".to_vec(), "x.safetensors").err().unwrap();
        assert!(error.to_string().contains("x.safetensors is not a safetensors file"), "{error}");
    }

    #[test]
    fn half_precision_widens_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), f32::powi(2.0, -24));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0_f32).to_bits());
        assert_eq!(widen(Dtype::BF16, &0x3f80_u16.to_le_bytes()).unwrap(), [1.0]);
    }
}
