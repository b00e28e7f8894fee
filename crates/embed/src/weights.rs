//! Reading and writing model weights in the safetensors format.
//!
//! A safetensors file is a JSON header (names, dtypes, shapes, byte ranges)
//! followed by raw little-endian tensor data; the `safetensors` crate
//! parses and writes it. Here tensors come out as plain `Vec<f32>` (f16 and
//! bf16 weights are widened on the way), looked up by their Hugging Face
//! names under an optional prefix — all the encoders need, without a tensor
//! library.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::{EmbedError, EmbedResult};

/// The tensors of one safetensors file, kept as the file's bytes.
pub struct Weights {
    bytes: Vec<u8>,
    origin: String,
}

/// A view of [`Weights`] under a name prefix (`encoder.layer.0.` …).
#[derive(Clone)]
pub struct Scope<'a> {
    tensors: &'a SafeTensors<'a>,
    origin: &'a str,
    prefix: String,
}

impl Weights {
    /// Takes the bytes of a safetensors file; `origin` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, origin: impl Into<String>) -> EmbedResult<Self> {
        let origin = origin.into();
        SafeTensors::deserialize(&bytes)
            .map_err(|error| EmbedError::ModelInvalid(format!("{origin} is not a safetensors file: {error}")))?;
        Ok(Self { bytes, origin })
    }

    /// Reads a safetensors file.
    pub fn read(path: &Path) -> EmbedResult<Self> {
        let bytes = std::fs::read(path)
            .map_err(|error| EmbedError::ModelMissing(format!("reading {}: {error}", path.display())))?;
        Self::from_bytes(bytes, path.display().to_string())
    }

    /// Runs `read` over the parsed tensors (the parse borrows the bytes, so
    /// the view cannot outlive this call).
    pub fn with<T>(&self, read: impl FnOnce(Scope<'_>) -> EmbedResult<T>) -> EmbedResult<T> {
        let tensors = SafeTensors::deserialize(&self.bytes)
            .map_err(|error| EmbedError::ModelInvalid(format!("{}: {error}", self.origin)))?;
        read(Scope { tensors: &tensors, origin: &self.origin, prefix: String::new() })
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
        Scope { tensors: self.tensors, origin: self.origin, prefix: format!("{}{name}.", self.prefix) }
    }

    /// The tensor `name` as f32 values in row-major order, checked to have
    /// `shape`.
    pub fn get(&self, shape: &[usize], name: &str) -> EmbedResult<Vec<f32>> {
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
        widen(view.dtype(), view.data())
            .map_err(|problem| EmbedError::ModelInvalid(format!("{}: tensor {full}: {problem}", self.origin)))
    }

    /// A `[rows, cols]` matrix stored transposed: `[cols, rows]` row-major
    /// (PyTorch keeps linear weights as `[out, in]`; the multiply wants
    /// `[in, out]`).
    pub fn get_transposed(&self, rows: usize, cols: usize, name: &str) -> EmbedResult<Vec<f32>> {
        let values = self.get(&[rows, cols], name)?;
        let mut out = vec![0.0_f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = values[r * cols + c];
            }
        }
        Ok(out)
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

/// Writes f32 tensors (name, shape, row-major values) as a safetensors
/// file.
pub fn write_f32(path: &Path, tensors: &[(&str, Vec<usize>, &[f32])]) -> EmbedResult<()> {
    let bytes: Vec<Vec<u8>> =
        tensors.iter().map(|(_, _, values)| values.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let mut views = Vec::with_capacity(tensors.len());
    for ((name, shape, values), data) in tensors.iter().zip(&bytes) {
        if shape.iter().product::<usize>() != values.len() {
            return Err(EmbedError::Inference(format!("tensor {name}: {} values for shape {shape:?}", values.len())));
        }
        let view = safetensors::tensor::TensorView::new(Dtype::F32, shape.clone(), data)
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
