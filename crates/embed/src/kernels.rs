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
//! With `amx` (the tile kernels), this is the only module allowed `unsafe`:
//! `gemm` takes raw pointers and strides. [`matmul`] checks every index the
//! multiply can touch against the slices before calling it.

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

/// The largest value of `row` (in independent lanes, which vectorise).
#[inline(always)]
pub(crate) fn max_of(row: &[f32]) -> f32 {
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
        // Exponentiate and sum in one pass, with independent lane sums.
        let mut lanes = [0.0_f32; LANES];
        let mut chunks = row.chunks_exact_mut(LANES);
        for chunk in &mut chunks {
            for (lane, value) in lanes.iter_mut().zip(chunk.iter_mut()) {
                *value = fast_exp(*value - max);
                *lane += *value;
            }
        }
        let mut sum = 0.0_f32;
        for value in chunks.into_remainder() {
            *value = fast_exp(*value - max);
            sum += *value;
        }
        let inv = 1.0 / (sum + lanes.iter().sum::<f32>());
        for value in row.iter_mut() {
            *value *= inv;
        }
    }
}

/// `out[o · tokens + t] = w[o] · x[t]`: every row of `w` (PyTorch's
/// `[outputs, inputs]` layout, `inputs` wide) dotted with every token of
/// `x` (`[tokens, inputs]`). Both operands are read along their rows, the
/// weight once from start to end; for a few tokens this beats a general
/// multiply, which would read the weight transposed, column by column.
pub fn dot_rows(x: &[f32], inputs: usize, w: &[f32], out: &mut [f32]) {
    let tokens = x.len() / inputs;
    let rows = w.len() / inputs;
    assert!(inputs > 0 && x.len() == tokens * inputs && w.len() == rows * inputs, "operand shapes");
    assert!(out.len() >= rows * tokens, "output shape");
    #[cfg(target_arch = "x86_64")]
    if inputs.is_multiple_of(16) && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above), and the
        // shapes were checked against the slices' lengths, which is all
        // the kernel's pointer arithmetic relies on.
        unsafe { dot_rows_avx512(x, inputs, w, out) };
        return;
    }
    dot_rows_portable(x, inputs, w, out);
}

/// [`dot_rows`] with AVX-512: four tokens at a time against each row, so a
/// loaded piece of the row feeds four independent fused multiply-adds.
/// Rows are the outer loop: each is read once, while the tokens (a few
/// dozen rows of activations) stay in cache.
///
/// # Safety
/// The CPU must have AVX-512F; `inputs` must be a multiple of 16, `x` and
/// `w` whole multiples of `inputs` long, and `out` at least `rows × tokens`
/// long (what [`dot_rows`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dot_rows_avx512(x: &[f32], inputs: usize, w: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::{_mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps};
    let tokens = x.len() / inputs;
    for (o, row) in w.chunks_exact(inputs).enumerate() {
        let out_row = &mut out[o * tokens..(o + 1) * tokens];
        let mut t = 0;
        while t + 4 <= tokens {
            let group = &x[t * inputs..(t + 4) * inputs];
            let (mut s0, mut s1, mut s2, mut s3) =
                (_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps());
            for start in (0..inputs).step_by(16) {
                // SAFETY: `start + 16 ≤ inputs`, so every load reads 16
                // floats inside `row` (one row of `w`) or inside the
                // token's own row of `group`.
                unsafe {
                    let piece = _mm512_loadu_ps(row.as_ptr().add(start));
                    s0 = _mm512_fmadd_ps(piece, _mm512_loadu_ps(group.as_ptr().add(start)), s0);
                    s1 = _mm512_fmadd_ps(piece, _mm512_loadu_ps(group.as_ptr().add(inputs + start)), s1);
                    s2 = _mm512_fmadd_ps(piece, _mm512_loadu_ps(group.as_ptr().add(2 * inputs + start)), s2);
                    s3 = _mm512_fmadd_ps(piece, _mm512_loadu_ps(group.as_ptr().add(3 * inputs + start)), s3);
                }
            }
            out_row[t] = _mm512_reduce_add_ps(s0);
            out_row[t + 1] = _mm512_reduce_add_ps(s1);
            out_row[t + 2] = _mm512_reduce_add_ps(s2);
            out_row[t + 3] = _mm512_reduce_add_ps(s3);
            t += 4;
        }
        for (token, value) in x[t * inputs..].chunks_exact(inputs).zip(&mut out_row[t..]) {
            let mut sum = _mm512_setzero_ps();
            for start in (0..inputs).step_by(16) {
                // SAFETY: as above, 16 floats inside `row` and `token`.
                unsafe {
                    sum = _mm512_fmadd_ps(
                        _mm512_loadu_ps(row.as_ptr().add(start)),
                        _mm512_loadu_ps(token.as_ptr().add(start)),
                        sum,
                    );
                }
            }
            *value = _mm512_reduce_add_ps(sum);
        }
    }
}

/// [`dot_rows`] on any CPU (compiled per CPU level).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
fn dot_rows_portable(x: &[f32], inputs: usize, w: &[f32], out: &mut [f32]) {
    let tokens = x.len() / inputs;
    for (row, out_row) in w.chunks_exact(inputs).zip(out.chunks_exact_mut(tokens)) {
        for (token, value) in x.chunks_exact(inputs).zip(out_row.iter_mut()) {
            *value = dot(row, token);
        }
    }
}

/// A dot product in 16 independent lanes (which vectorise), summed at the end.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 16];
    let (a_body, a_tail) = a.split_at(a.len() - a.len() % 16);
    let (b_body, b_tail) = b.split_at(b.len() - b.len() % 16);
    for (ca, cb) in a_body.chunks_exact(16).zip(b_body.chunks_exact(16)) {
        for lane in 0..16 {
            lanes[lane] += ca[lane] * cb[lane];
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
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

/// Output columns in one panel of f16 weights ([`pack_f16_panels`]).
pub const PANEL: usize = 16;

/// Tokens multiplied together against one panel: each keeps one vector
/// register of sums, and the panel's weights are read once per block.
const PANEL_TOKENS: usize = 12;

/// Whether this CPU has AVX-512F, which the f16-weight multiply
/// ([`matmul_f16`]) needs to be fast (it runs everywhere, slowly without).
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Panels needed for `outputs` columns.
pub fn panels(outputs: usize) -> usize {
    outputs.div_ceil(PANEL)
}

/// A weight `w` (`[inputs, outputs]` row-major f32, the transposed layout)
/// rounded to IEEE f16 (to nearest, ties to even) in column panels: panel
/// `p` holds columns `16p … 16p + 15` as `[inputs, 16]` row-major, the last
/// one padded with zeros. [`matmul_f16`] then reads each panel from start
/// to end: half the bytes of f32, in the order the multiply wants them.
pub fn pack_f16_panels(w: &[f32], inputs: usize, outputs: usize) -> Vec<u16> {
    assert_eq!(w.len(), inputs * outputs, "weight shape");
    let mut packed = vec![0_u16; panels(outputs) * inputs * PANEL];
    for (p, panel) in packed.chunks_exact_mut(inputs * PANEL).enumerate() {
        let first = p * PANEL;
        let width = PANEL.min(outputs - first);
        for (k, row) in panel.chunks_exact_mut(PANEL).enumerate() {
            for (value, &weight) in row[..width].iter_mut().zip(&w[k * outputs + first..k * outputs + first + width]) {
                *value = half::f16::from_f32(weight).to_bits();
            }
        }
    }
    packed
}

/// `out[tokens, outputs] = x[tokens, inputs] · W` with `W` in f16 panels
/// ([`pack_f16_panels`]): every weight widened to f32 as it is read, the
/// arithmetic in f32. For one short text the multiply is bound by reading
/// the weights, and these are half the bytes of f32 ones. Panels are split
/// over the rayon pool when `threads > 1`. AVX-512 where the CPU has it, a
/// portable loop otherwise (the same sums, slower).
///
/// # Panics
/// When the shapes do not agree with the slices.
pub fn matmul_f16(x: &[f32], tokens: usize, inputs: usize, w: &[u16], outputs: usize, out: &mut [f32], threads: usize) {
    matmul_f16_on(x, tokens, inputs, w, outputs, out, threads, has_avx512());
}

/// [`matmul_f16`] with the kernel chosen: AVX-512 (`avx512`, which the
/// CPU must have) or the portable loop.
#[allow(clippy::too_many_arguments)]
fn matmul_f16_on(
    x: &[f32],
    tokens: usize,
    inputs: usize,
    w: &[u16],
    outputs: usize,
    out: &mut [f32],
    threads: usize,
    avx512: bool,
) {
    use rayon::prelude::*;
    assert!(inputs > 0, "no inputs");
    assert_eq!(x.len(), tokens * inputs, "activation shape");
    assert_eq!(w.len(), panels(outputs) * inputs * PANEL, "weight shape");
    assert_eq!(out.len(), tokens * outputs, "output shape");
    if tokens == 0 || outputs == 0 {
        return;
    }
    // The activations by block of tokens, each block input-major
    // ([`pack_token_blocks`]): the block's values for one input sit side
    // by side, so the kernel's loads for a step come from one cache line
    // (read along the rows, twelve streams far apart made the multiply
    // 1.7× slower). Packed once; every panel reads them.
    let heights = block_heights(tokens);
    let blocks = pack_token_blocks(x, inputs, &heights);
    // Sums by panel (`[panels, tokens, 16]`), so tasks write apart; then
    // moved into the rows of `out`.
    let mut by_panel = vec![0.0_f32; panels(outputs) * tokens * PANEL];
    let work = |(sums, panel): (&mut [f32], &[u16])| {
        let mut start = 0;
        for &height in &heights {
            let block = &blocks[start * inputs..(start + height) * inputs];
            let block_sums = &mut sums[start * PANEL..(start + height) * PANEL];
            start += height;
            #[cfg(target_arch = "x86_64")]
            if avx512 {
                // SAFETY: the caller chose AVX-512 only when the CPU has it
                // (`has_avx512`); `block` holds `inputs` values for each of
                // its rows, `panel` `inputs × 16` values and `block_sums` 16
                // per row, which is all the kernel reads and writes.
                unsafe { panel_block_avx512(block, inputs, panel, block_sums) };
                continue;
            }
            panel_block_portable(block, inputs, panel, block_sums);
        }
    };
    let chunk = tokens * PANEL;
    if threads > 1 {
        by_panel.par_chunks_mut(chunk).zip(w.par_chunks(inputs * PANEL)).for_each(work);
    } else {
        by_panel.chunks_mut(chunk).zip(w.chunks(inputs * PANEL)).for_each(work);
    }
    for (p, sums) in by_panel.chunks_exact(chunk).enumerate() {
        let first = p * PANEL;
        let width = PANEL.min(outputs - first);
        for (t, row) in sums.chunks_exact(PANEL).enumerate() {
            out[t * outputs + first..t * outputs + first + width].copy_from_slice(&row[..width]);
        }
    }
}

/// The heights of the blocks `tokens` rows are multiplied in: as few
/// blocks of at most [`PANEL_TOKENS`] as cover them, as even as can be
/// (50 tokens: five of 10, not four of 12 and one of 2 — a block reads
/// its whole panel whatever its height, so a short one costs nearly as
/// much as a full one).
fn block_heights(tokens: usize) -> Vec<usize> {
    let blocks = tokens.div_ceil(PANEL_TOKENS);
    (0..blocks).map(|b| tokens / blocks + usize::from(b < tokens % blocks)).collect()
}

/// `x` (`[tokens, inputs]`) in blocks of `heights` rows ([`block_heights`]),
/// each input-major: value `k` of a block's row `t` at `k · height + t`
/// from the block's start.
fn pack_token_blocks(x: &[f32], inputs: usize, heights: &[usize]) -> Vec<f32> {
    let mut packed = vec![0.0_f32; x.len()];
    let mut start = 0;
    for &height in heights {
        let block = &mut packed[start * inputs..(start + height) * inputs];
        for (t, row) in x[start * inputs..(start + height) * inputs].chunks_exact(inputs).enumerate() {
            for (k, &value) in row.iter().enumerate() {
                block[k * height + t] = value;
            }
        }
        start += height;
    }
    packed
}

/// One panel against one block of up to [`PANEL_TOKENS`] rows, packed
/// input-major ([`pack_token_blocks`]): `sums[t][c] = Σ_k x[k][t] ·
/// panel[k][c]`.
///
/// # Safety
/// The CPU must have AVX-512F; `x` must hold `inputs` values for each of
/// its rows (at most [`PANEL_TOKENS`]), `panel` `inputs × 16` values and
/// `sums` 16 values per row of `x`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn panel_block_avx512(x: &[f32], inputs: usize, panel: &[u16], sums: &mut [f32]) {
    use std::arch::x86_64::{
        __m256i, __m512, _mm256_loadu_si256, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps,
    };
    let rows = x.len() / inputs;
    assert!(
        (1..=PANEL_TOKENS).contains(&rows)
            && x.len() == rows * inputs
            && panel.len() == inputs * PANEL
            && sums.len() == rows * PANEL,
        "block shape"
    );
    let mut acc: [__m512; PANEL_TOKENS] = [_mm512_setzero_ps(); PANEL_TOKENS];
    let (x, w) = (x.as_ptr(), panel.as_ptr());
    // One loop per block height, so each is unrolled over its rows and the
    // sums stay in registers.
    macro_rules! rows {
        ($n:literal) => {
            for k in 0..inputs {
                // SAFETY: `k < inputs`: the 16 weights at `16k` lie inside
                // `panel`, and `x[k · rows + t]` (`t < rows`) inside the block.
                unsafe {
                    let weights = _mm512_cvtph_ps(_mm256_loadu_si256(w.add(k * PANEL).cast::<__m256i>()));
                    for t in 0..$n {
                        acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(*x.add(k * $n + t)), weights, acc[t]);
                    }
                }
            }
        };
    }
    match rows {
        12 => rows!(12),
        11 => rows!(11),
        10 => rows!(10),
        9 => rows!(9),
        8 => rows!(8),
        7 => rows!(7),
        6 => rows!(6),
        5 => rows!(5),
        4 => rows!(4),
        3 => rows!(3),
        2 => rows!(2),
        _ => rows!(1),
    }
    for (t, sum) in acc.iter().take(rows).enumerate() {
        // SAFETY: `sums` holds 16 values for each of the `rows` rows.
        unsafe { _mm512_storeu_ps(sums.as_mut_ptr().add(t * PANEL), *sum) };
    }
}

/// [`panel_block_avx512`] on any CPU.
fn panel_block_portable(x: &[f32], inputs: usize, panel: &[u16], sums: &mut [f32]) {
    let rows = x.len() / inputs;
    let mut widened = [0.0_f32; PANEL];
    sums.fill(0.0);
    for (weights, values) in panel.chunks_exact(PANEL).zip(x.chunks_exact(rows)) {
        for (wide, &bits) in widened.iter_mut().zip(weights) {
            *wide = half::f16::from_bits(bits).to_f32();
        }
        for (&value, sums) in values.iter().zip(sums.chunks_exact_mut(PANEL)) {
            for (sum, wide) in sums.iter_mut().zip(&widened) {
                *sum += value * wide;
            }
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

    /// Tokens are multiplied in as few blocks as cover them, as even as can
    /// be; each block is packed input-major, rows in order.
    #[test]
    fn token_blocks_are_few_even_and_packed_input_major() {
        for tokens in 0..=200 {
            let heights = block_heights(tokens);
            assert_eq!(heights.iter().sum::<usize>(), tokens, "{tokens} tokens");
            assert_eq!(heights.len(), tokens.div_ceil(PANEL_TOKENS), "{tokens} tokens");
            let (low, high) = (heights.iter().min().copied(), heights.iter().max().copied());
            assert!(high.unwrap_or(0) <= PANEL_TOKENS, "{tokens}: {heights:?}");
            assert!(high.unwrap_or(0) - low.unwrap_or(0) <= 1, "{tokens}: {heights:?}");
        }
        assert_eq!(block_heights(50), [10; 5]);
        assert_eq!(block_heights(13), [7, 6]);
        // 14 tokens of 3 inputs: blocks of 7; value k of row t at k·7 + t.
        let (tokens, inputs) = (14, 3);
        let x: Vec<f32> = (0..tokens * inputs).map(|i| i as f32).collect();
        let packed = pack_token_blocks(&x, inputs, &block_heights(tokens));
        for t in 0..tokens {
            let (block, row) = (t / 7, t % 7);
            for k in 0..inputs {
                assert_eq!(packed[block * 7 * inputs + k * 7 + row], x[t * inputs + k], "row {t}, input {k}");
            }
        }
    }

    /// The f16-panel multiply computes the product of the f16-rounded
    /// weights exactly as f32 arithmetic does, with the AVX-512 kernel and
    /// the portable loop, one thread and several: every block height (1 to
    /// 12 tokens and more), widths that fill panels and one that pads the
    /// last; the rounding itself is IEEE's (to nearest, ties to even).
    #[test]
    fn f16_panel_multiply_matches_the_rounded_weights_product() {
        let values = |n: usize, seed: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.5 - 1.0).collect()
        };
        for (inputs, outputs) in [(48, 64), (37, 40), (384, 16)] {
            let w = values(inputs * outputs, 3);
            let packed = pack_f16_panels(&w, inputs, outputs);
            assert_eq!(packed.len(), panels(outputs) * inputs * PANEL);
            let rounded = |k: usize, o: usize| f64::from(half::f16::from_f32(w[k * outputs + o]).to_f32());
            for tokens in (1..=13).chain([25, 31]) {
                let x = values(tokens * inputs, tokens);
                for threads in [1, 2] {
                    let mut out = vec![f32::NAN; tokens * outputs];
                    matmul_f16(&x, tokens, inputs, &packed, outputs, &mut out, threads);
                    let mut portable = vec![f32::NAN; tokens * outputs];
                    matmul_f16_on(&x, tokens, inputs, &packed, outputs, &mut portable, threads, false);
                    for t in 0..tokens {
                        for o in 0..outputs {
                            let exact: f64 = (0..inputs).map(|k| rounded(k, o) * f64::from(x[t * inputs + k])).sum();
                            let fast = f64::from(out[t * outputs + o]);
                            let slow = f64::from(portable[t * outputs + o]);
                            let what = format!("{inputs}×{outputs}, {tokens} tokens, {threads} threads, ({t}, {o})");
                            assert!((fast - exact).abs() < 1e-4, "{what}: {fast} against {exact}");
                            assert!((slow - exact).abs() < 1e-4, "portable {what}: {slow} against {exact}");
                        }
                    }
                }
            }
        }
        // Rounding: exact halves, ties to even, overflow to infinity,
        // subnormals kept.
        let packed = pack_f16_panels(&[1.0, 1.0 + 1.0 / 2048.0, 65_520.0, 1e-6], 4, 1);
        let bits: Vec<u16> = packed.chunks(PANEL).map(|row| row[0]).collect();
        assert_eq!(bits, [0x3c00, 0x3c00, 0x7c00, 0x0011]);
        assert!(packed.chunks(PANEL).all(|row| row[1..].iter().all(|&padding| padding == 0)));
    }

    #[test]
    fn dot_rows_multiplies_by_the_transposed_rows() {
        // 37 inputs (two 16-wide pieces and a tail: the portable loop) and
        // 64 (the AVX-512 kernel where the CPU has it); 7 tokens: one group
        // of four and three alone.
        for inputs in [37, 64] {
            let (outputs, tokens) = (5, 7);
            let values = |n: usize, seed: usize| -> Vec<f32> {
                (0..n).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.5 - 1.0).collect()
            };
            let w = values(outputs * inputs, 11);
            let x = values(tokens * inputs, 12);
            let mut out = vec![0.0_f32; outputs * tokens];
            dot_rows(&x, inputs, &w, &mut out);
            let mut portable = vec![0.0_f32; outputs * tokens];
            dot_rows_portable(&x, inputs, &w, &mut portable);
            for o in 0..outputs {
                for t in 0..tokens {
                    let exact: f64 =
                        (0..inputs).map(|i| f64::from(w[o * inputs + i]) * f64::from(x[t * inputs + i])).sum();
                    let index = o * tokens + t;
                    assert!((f64::from(out[index]) - exact).abs() < 1e-4, "{inputs} inputs ({o}, {t})");
                    assert!((f64::from(portable[index]) - exact).abs() < 1e-4, "portable, {inputs} inputs");
                }
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

/// A weight matrix `[k, n]` quantised to int8 per output column (symmetric:
/// `w ≈ q · scale[n]`), packed for the AVX-512 VNNI kernel: for each group of
/// four rows of `k` and sixteen columns, 64 bytes where column `j`'s four
/// values are adjacent (the operand layout of `vpdpbusd`).
#[derive(Debug, Clone)]
pub struct Int8Matrix {
    k: usize,
    n: usize,
    packed: Vec<i8>,
    scales: Vec<f32>,
    /// Σ_k q[k][n], to undo the +128 offset of the unsigned activations.
    column_sums: Vec<i32>,
}

impl Int8Matrix {
    /// Quantises a row-major `[k, n]` matrix. `k` must be a multiple of 4
    /// and `n` of 64 (true for every MiniLM dense layer).
    pub fn quantize(weight: &[f32], k: usize, n: usize) -> Self {
        assert!(k.is_multiple_of(4) && n.is_multiple_of(64), "int8 layout needs k % 4 == 0 and n % 64 == 0");
        assert_eq!(weight.len(), k * n);
        let mut scales = vec![0.0_f32; n];
        for row in weight.chunks_exact(n) {
            for (scale, &w) in scales.iter_mut().zip(row) {
                *scale = scale.max(w.abs());
            }
        }
        for scale in &mut scales {
            *scale = if *scale > 0.0 { *scale / 127.0 } else { 1.0 };
        }
        let mut packed = vec![0_i8; k * n];
        let mut column_sums = vec![0_i32; n];
        for kk in 0..k {
            for j in 0..n {
                let q = (weight[kk * n + j] / scales[j]).round().clamp(-127.0, 127.0) as i8;
                column_sums[j] += i32::from(q);
                packed[packed_index(kk, j, k)] = q;
            }
        }
        Self { k, n, packed, scales, column_sums }
    }

    /// Rows (input width).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns (output width).
    pub fn n(&self) -> usize {
        self.n
    }
}

/// Whether this CPU has the AVX-512 VNNI instructions the int8 path needs.
pub fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Position of weight (kk, j) in the packed layout: columns in blocks of 64
/// (four vectors of 16); within a block, for each group of four `k`, 256
/// contiguous bytes (column-major within a vector: column `j`'s four values
/// adjacent). The kernel then streams each block's weights sequentially.
fn packed_index(kk: usize, j: usize, k: usize) -> usize {
    let (group, byte) = (kk / 4, kk % 4);
    let (block64, vector, lane) = (j / 64, (j % 64) / 16, j % 16);
    ((block64 * (k / 4) + group) * 4 + vector) * 64 + lane * 4 + byte
}

/// Rows of activations handled together by the kernel.
const INT8_ROWS: usize = 6;

/// `out[rows, n] = x[rows, k] · W` with `W` int8 and `x` quantised on the fly
/// per row (symmetric, stored as `u8 = q + 128`). Uses AVX-512 VNNI when
/// present, a portable loop otherwise (same result, much slower).
pub fn int8_matmul(x: &[f32], rows: usize, w: &Int8Matrix, out: &mut [f32], threads: usize) {
    int8_matmul_then(x, rows, w, out, threads, Epilogue::None);
}

/// What to apply to each output row right after dequantising it, while it
/// is still in cache.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// Nothing.
    None,
    /// Add a bias.
    Bias(&'a [f32]),
    /// Add a bias and apply the exact GELU.
    BiasGelu(&'a [f32]),
}

/// [`int8_matmul`] followed by an epilogue on each output row.
pub fn int8_matmul_then(
    x: &[f32],
    rows: usize,
    w: &Int8Matrix,
    out: &mut [f32],
    threads: usize,
    epilogue: Epilogue<'_>,
) {
    use rayon::prelude::*;
    let (k, n) = (w.k, w.n);
    assert_eq!(x.len(), rows * k, "activation shape");
    assert_eq!(out.len(), rows * n, "output shape");
    let vnni = has_vnni();
    // Rows per task: a multiple of the kernel's tile height. Each column
    // block's weights are reused by every tile of the task while they are
    // still in L1/L2.
    let block_rows = INT8_ROWS * 16;
    let work = |(block_index, out_block): (usize, &mut [f32])| {
        let first = block_index * block_rows;
        let count = out_block.len() / n;
        let padded = count.div_ceil(INT8_ROWS) * INT8_ROWS;
        let mut quantized = vec![128_u8; padded * k];
        let mut row_scales = vec![0.0_f32; count];
        for r in 0..count {
            let row = &x[(first + r) * k..(first + r + 1) * k];
            row_scales[r] = quantize_row(row, &mut quantized[r * k..(r + 1) * k]);
        }
        let mut accumulators = vec![0_i32; padded * n];
        #[cfg(target_arch = "x86_64")]
        if vnni {
            // SAFETY: the CPU has avx512f, avx512bw and avx512vnni (checked by
            // `has_vnni`); the kernel asserts the slice lengths it relies on.
            unsafe { int8_kernel_vnni(&quantized, padded, k, &w.packed, n, &mut accumulators) };
        } else {
            int8_kernel_portable(&quantized, padded, k, &w.packed, n, &mut accumulators);
        }
        #[cfg(not(target_arch = "x86_64"))]
        int8_kernel_portable(&quantized, padded, k, &w.packed, n, &mut accumulators);
        for r in 0..count {
            let target = &mut out_block[r * n..(r + 1) * n];
            dequantize_row(&accumulators[r * n..(r + 1) * n], &w.column_sums, &w.scales, row_scales[r], target);
            match epilogue {
                Epilogue::None => {}
                Epilogue::Bias(bias) => add_bias(target, bias),
                Epilogue::BiasGelu(bias) => bias_gelu(target, bias),
            }
        }
    };
    if threads > 1 {
        out.par_chunks_mut(block_rows * n).enumerate().for_each(work);
    } else {
        out.chunks_mut(block_rows * n).enumerate().for_each(work);
    }
}

/// Quantises one row symmetrically to `u8 = round(v / scale) + 128`;
/// returns the scale (`max |v| / 127`).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq+avx512bw", "x86_64+avx2+fma"))]
fn quantize_row(row: &[f32], out: &mut [u8]) -> f32 {
    let mut lanes = [0.0_f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let mut max = chunks.remainder().iter().fold(0.0_f32, |m, v| m.max(v.abs()));
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            *lane = if a > *lane { a } else { *lane };
        }
    }
    max = lanes.iter().fold(max, |m, &v| m.max(v));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / scale;
    // 128 + round(v/scale) lands in the low mantissa bits of this sum (the
    // 1.5·2^23 trick); truncating the bits to u8 is a vector shuffle, where
    // a float-to-int cast would be scalarised.
    const MAGIC: f32 = 12_582_912.0 + 128.0;
    for (q, &v) in out.iter_mut().zip(row) {
        *q = ((v * inv).clamp(-127.0, 127.0) + MAGIC).to_bits() as u8;
    }
    scale
}

/// `out[j] = (acc[j] − 128·column_sums[j]) · row_scale · scales[j]`.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq", "x86_64+avx2+fma"))]
fn dequantize_row(acc: &[i32], column_sums: &[i32], scales: &[f32], row_scale: f32, out: &mut [f32]) {
    for (((o, &a), &sum), &scale) in out.iter_mut().zip(acc).zip(column_sums).zip(scales) {
        *o = (a - 128 * sum) as f32 * row_scale * scale;
    }
}

/// Reference kernel: `acc[r][j] = Σ_k a[r][k] · q[k][j]` for `rows` rows.
fn int8_kernel_portable(a: &[u8], rows: usize, k: usize, packed: &[i8], n: usize, acc: &mut [i32]) {
    acc.fill(0);
    for r in 0..rows {
        for kk in 0..k {
            let av = i32::from(a[r * k + kk]);
            for j in 0..n {
                acc[r * n + j] += av * i32::from(packed[packed_index(kk, j, k)]);
            }
        }
    }
}

/// The VNNI kernel: for each block of 64 columns, every tile of six rows of
/// `a` (so the block's weights are reused while cached), 24 accumulators
/// held in registers (of 32; with four weight vectors and one broadcast),
/// one `vpdpbusd` per (row, 16 columns) per step of four `k` values. `rows`
/// must be a multiple of 6, `n` of 64, `k` of 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn int8_kernel_vnni(a: &[u8], rows: usize, k: usize, packed: &[i8], n: usize, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    assert!(n.is_multiple_of(64) && k.is_multiple_of(4) && rows.is_multiple_of(INT8_ROWS), "VNNI kernel shape");
    assert!(a.len() >= rows * k && packed.len() >= k * n && acc.len() >= rows * n);
    for block in (0..n / 16).step_by(4) {
        // This block's weights: k/4 groups of 256 contiguous bytes.
        let block_weights = packed.as_ptr().wrapping_add((block / 4) * (k / 4) * 256);
        for tile in (0..rows).step_by(INT8_ROWS) {
            let row_ptrs: [*const u8; INT8_ROWS] = std::array::from_fn(|r| a.as_ptr().wrapping_add((tile + r) * k));
            let mut c = [[_mm512_setzero_si512(); 4]; INT8_ROWS];
            let mut weights_ptr = block_weights;
            for group in 0..k / 4 {
                // SAFETY: weights_ptr + 256 ≤ packed end (block/4 < n/64 and
                // group < k/4); each row pointer + group·4 + 4 ≤ a's end
                // (tile + r < rows).
                unsafe {
                    let w0 = _mm512_loadu_si512(weights_ptr.cast());
                    let w1 = _mm512_loadu_si512(weights_ptr.add(64).cast());
                    let w2 = _mm512_loadu_si512(weights_ptr.add(128).cast());
                    let w3 = _mm512_loadu_si512(weights_ptr.add(192).cast());
                    for (r, row) in row_ptrs.iter().enumerate() {
                        let four = std::ptr::read_unaligned(row.add(group * 4).cast::<i32>());
                        let broadcast = _mm512_set1_epi32(four);
                        c[r][0] = _mm512_dpbusd_epi32(c[r][0], broadcast, w0);
                        c[r][1] = _mm512_dpbusd_epi32(c[r][1], broadcast, w1);
                        c[r][2] = _mm512_dpbusd_epi32(c[r][2], broadcast, w2);
                        c[r][3] = _mm512_dpbusd_epi32(c[r][3], broadcast, w3);
                    }
                    weights_ptr = weights_ptr.add(256);
                }
            }
            for (r, row_sums) in c.iter().enumerate() {
                for (col, sum) in row_sums.iter().enumerate() {
                    let offset = (tile + r) * n + (block + col) * 16;
                    // SAFETY: offset + 16 ≤ rows·n ≤ acc.len().
                    unsafe { _mm512_storeu_si512(acc.as_mut_ptr().add(offset).cast(), *sum) };
                }
            }
        }
    }
}

#[cfg(test)]
mod int8_tests {
    use super::*;

    fn pseudo_random(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn int8_product_is_close_to_the_f32_product() {
        let (rows, k, n) = (37, 64, 128);
        let x = pseudo_random(rows * k, 1);
        let w = pseudo_random(k * n, 2);
        let mut exact = vec![0.0; rows * n];
        matmul(
            &x,
            View::dense(0, rows, k),
            &w,
            View::dense(0, k, n),
            &mut exact,
            View::dense(0, rows, n),
            1.0,
            false,
            1,
        );
        let quantized = Int8Matrix::quantize(&w, k, n);
        let mut approx = vec![0.0; rows * n];
        int8_matmul(&x, rows, &quantized, &mut approx, 2);
        let dot: f64 = exact.iter().zip(&approx).map(|(a, b)| f64::from(a * b)).sum();
        let norms: f64 = exact.iter().map(|a| f64::from(a * a)).sum::<f64>().sqrt()
            * approx.iter().map(|b| f64::from(b * b)).sum::<f64>().sqrt();
        assert!(dot / norms > 0.999, "cosine {}", dot / norms);
    }

    #[test]
    fn vnni_and_portable_kernels_agree_exactly() {
        // The project's machines (and CI) have AVX-512 VNNI; on one without,
        // this test cannot check the fast kernel and says so.
        assert!(has_vnni(), "this CPU lacks AVX-512 VNNI, so the int8 kernel cannot be tested here");
        let (k, n) = (32, 128);
        let a: Vec<u8> = (0..INT8_ROWS * k).map(|i| (i * 37 % 256) as u8).collect();
        let w = Int8Matrix::quantize(&pseudo_random(k * n, 3), k, n);
        let mut portable = vec![0; INT8_ROWS * n];
        let mut fast = vec![0; INT8_ROWS * n];
        int8_kernel_portable(&a, INT8_ROWS, k, &w.packed, n, &mut portable);
        // SAFETY: guarded by has_vnni above.
        unsafe { int8_kernel_vnni(&a, INT8_ROWS, k, &w.packed, n, &mut fast) };
        assert_eq!(portable, fast);
    }
}
