//! Numeric kernels of the encoder: matrix multiply (through the `gemm`
//! crate, candle's own CPU engine) and the elementwise steps (layer norm,
//! GELU, softmax) written as plain loops.
//!
//! The elementwise loops are compiled several times by `multiversion` (for
//! AVX-512, AVX2+FMA and the baseline) and the best version for the running
//! CPU is picked at run time, so the binary stays portable while the loops
//! vectorise on wide units. `exp` and `erf` are polynomial approximations
//! (exp: relative error < 5e-7; erf: absolute error < 5e-7) instead of libm
//! calls, which do not vectorise.
//!
//! This is the only module allowed `unsafe`: `gemm` takes raw pointers and
//! strides. [`matmul`] checks every index the multiply can touch against the
//! slices before calling it.

#![allow(unsafe_code)]

use multiversion::multiversion;

/// A strided view of a matrix inside a slice: element (i, j) is at
/// `offset + i * row_stride + j * col_stride`.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Index of element (0, 0).
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Distance between rows.
    pub row_stride: usize,
    /// Distance between columns.
    pub col_stride: usize,
}

impl View {
    /// A dense row-major `rows × cols` matrix starting at `offset`.
    pub fn dense(offset: usize, rows: usize, cols: usize) -> Self {
        Self { offset, rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// The largest index any element occupies (0 for an empty view).
    fn last_index(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            return self.offset;
        }
        self.offset + (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride
    }
}

/// `c := [c +] scale · a · b` for strided views. `threads > 1` lets `gemm`
/// split the work over the global rayon pool.
///
/// # Panics
/// When the shapes do not agree or a view reaches outside its slice.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    a: &[f32],
    av: View,
    b: &[f32],
    bv: View,
    c: &mut [f32],
    cv: View,
    scale: f32,
    accumulate: bool,
    threads: usize,
) {
    assert_eq!(av.cols, bv.rows, "inner dimensions differ");
    assert_eq!((cv.rows, cv.cols), (av.rows, bv.cols), "output shape differs");
    if av.rows == 0 || bv.cols == 0 {
        return;
    }
    assert!(av.cols == 0 || av.last_index() < a.len(), "lhs view out of bounds");
    assert!(bv.rows == 0 || bv.last_index() < b.len(), "rhs view out of bounds");
    assert!(cv.last_index() < c.len(), "output view out of bounds");
    let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    // SAFETY: every index (offset + i·row_stride + j·col_stride) that gemm
    // reads or writes lies within the slices (checked above for the largest
    // one; strides are non-negative). `c` is borrowed mutably, so it cannot
    // alias `a` or `b`.
    unsafe {
        gemm::gemm(
            cv.rows,
            cv.cols,
            av.cols,
            c.as_mut_ptr().add(cv.offset),
            cv.col_stride as isize,
            cv.row_stride as isize,
            accumulate,
            a.as_ptr().add(av.offset),
            av.col_stride as isize,
            av.row_stride as isize,
            b.as_ptr().add(bv.offset),
            bv.col_stride as isize,
            bv.row_stride as isize,
            if accumulate { 1.0 } else { 0.0 },
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// `e^x` for f32, accurate to about 1.5e-7 relative, vectorisable.
#[inline(always)]
pub fn fast_exp(x: f32) -> f32 {
    // Range reduction: x = n·ln2 + r, |r| ≤ ln2/2; e^r by a degree-6 polynomial.
    // n is found with the 1.5·2^23 trick (the sum's low mantissa bits hold
    // round(x·log2 e)): a float-to-int `as` cast would be scalarised by the
    // saturation checks and keep the loop from vectorising.
    const MAGIC: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + MAGIC;
    let n = shifted - MAGIC;
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0 + r * (0.5 + r * (0.166_666_67 + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
    // 2^n through the exponent bits: the integer n is the low bits of `shifted`.
    let n_int = shifted.to_bits().wrapping_sub(MAGIC.to_bits());
    let bits = n_int.wrapping_add(127) << 23;
    p * f32::from_bits(bits)
}

/// `erf(x)` for f32 (Abramowitz & Stegun 7.1.26: 1.4e-7 absolute error,
/// under 5e-7 with f32 rounding), vectorisable.
#[inline(always)]
pub fn fast_erf(x: f32) -> f32 {
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t * (0.254_829_6 + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    sign * (1.0 - poly * fast_exp(-a * a))
}

/// Adds `bias` to every row of `x` (width = `bias.len()`) and applies the
/// exact GELU, `x · Φ(x) = x/2 · (1 + erf(x/√2))`.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
pub fn bias_gelu(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        for (value, b) in row.iter_mut().zip(bias) {
            let v = *value + b;
            *value = 0.5 * v * (1.0 + fast_erf(v * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

/// `x := layer_norm(x + residual + bias)` row by row (width = `gamma.len()`).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
pub fn add_bias_residual_norm(x: &mut [f32], residual: &[f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    for (row, res) in x.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
        for ((value, r), b) in row.iter_mut().zip(res).zip(bias) {
            *value += r + b;
        }
        normalize_row(row, gamma, beta, eps);
    }
}

#[inline(always)]
fn normalize_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = row.len() as f32;
    let mean = sum_of(row) / width;
    let mut lanes = [0.0_f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().map(|v| (v - mean) * (v - mean)).sum();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += (v - mean) * (v - mean);
        }
    }
    let var = (lanes.iter().sum::<f32>() + tail) / width;
    let inv = 1.0 / (var + eps).sqrt();
    for ((value, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *value = (*value - mean) * inv * g + b;
    }
}

/// Layer norm of every row in place.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(gamma.len()) {
        normalize_row(row, gamma, beta, eps);
    }
}

/// Lanes of the explicit reductions below: floating-point sums and maxima
/// are only vectorised when written as independent accumulators.
const LANES: usize = 16;

#[inline(always)]
fn max_of(row: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
        }
    }
    let mut max = lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for &v in tail {
        max = max.max(v);
    }
    max
}

#[inline(always)]
fn sum_of(row: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    lanes.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

/// Softmax of every row (width `width`) in place.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
pub fn softmax_rows(x: &mut [f32], width: usize) {
    for row in x.chunks_exact_mut(width) {
        let max = max_of(row);
        for value in row.iter_mut() {
            *value = fast_exp(*value - max);
        }
        let inv = 1.0 / sum_of(row);
        for value in row.iter_mut() {
            *value *= inv;
        }
    }
}

/// Adds `bias` to every row of `x`.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
pub fn add_bias(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        for (value, b) in row.iter_mut().zip(bias) {
            *value += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_and_erf_are_accurate() {
        for i in -8000..8000 {
            let x = i as f32 / 100.0;
            let exact = x.exp();
            assert!(((fast_exp(x) - exact) / exact).abs() < 5e-7, "exp({x})");
        }
        for i in -600..600 {
            let x = f64::from(i) / 100.0;
            assert!((f64::from(fast_erf(x as f32)) - erf64(x)).abs() < 5e-7, "erf({x})");
        }
    }

    /// erf by its Taylor series (exact enough for |x| ≤ 6 in f64).
    fn erf64(x: f64) -> f64 {
        if x.abs() > 5.0 {
            return x.signum();
        }
        let mut term = x;
        let mut sum = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn matmul_with_strides_matches_a_naive_product() {
        // a: 3×2 read transposed from a 2×3 buffer; b: 2×4 dense.
        let a_buffer = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let a = View { offset: 0, rows: 3, cols: 2, row_stride: 1, col_stride: 3 };
        let b: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let mut c = vec![1.0; 12];
        matmul(&a_buffer, a, &b, View::dense(0, 2, 4), &mut c, View::dense(0, 3, 4), 2.0, true, 1);
        for i in 0..3 {
            for j in 0..4 {
                let expected: f32 = (0..2).map(|k| a_buffer[k * 3 + i] * b[k * 4 + j]).sum::<f32>() * 2.0 + 1.0;
                assert_eq!(c[i * 4 + j], expected);
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn matmul_refuses_views_outside_their_slices() {
        let a = [1.0; 4];
        let mut c = [0.0; 4];
        matmul(&a, View::dense(0, 2, 2), &a, View::dense(1, 2, 2), &mut c, View::dense(0, 2, 2), 1.0, false, 1);
    }

    #[test]
    fn softmax_and_layer_norm_rows() {
        let mut x = vec![1.0, 2.0, 3.0, 1000.0, 1000.0, 1000.0];
        softmax_rows(&mut x, 3);
        assert!((x[0..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[2] > x[1] && x[1] > x[0]);
        assert!((x[3] - 1.0 / 3.0).abs() < 1e-6, "large values do not overflow");
        let mut y = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut y, &[1.0; 4], &[0.0; 4], 1e-12);
        assert!(y.iter().sum::<f32>().abs() < 1e-5);
        assert!((y.iter().map(|v| v * v).sum::<f32>() / 4.0 - 1.0).abs() < 1e-4);
    }
}
