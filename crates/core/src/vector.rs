//! Vector arithmetic shared by embedding providers, dedup and search.
//!
//! Vectors are L2-normalised by their providers, so cosine similarity is a
//! dot product; these helpers stay correct for unnormalised input too.

/// Dot product of two equally long vectors (extra components are ignored).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four independent accumulators let the compiler vectorise the loop.
    let mut sums = [0.0_f32; 4];
    let chunks = a.len().min(b.len()) / 4;
    for i in 0..chunks {
        for lane in 0..4 {
            sums[lane] += a[i * 4 + lane] * b[i * 4 + lane];
        }
    }
    let mut total = sums[0] + sums[1] + sums[2] + sums[3];
    for i in chunks * 4..a.len().min(b.len()) {
        total += a[i] * b[i];
    }
    total
}

/// Euclidean norm.
pub fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// Scales `v` to unit length in place; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let length = norm(v);
    if length > 0.0 {
        for x in v.iter_mut() {
            *x /= length;
        }
    }
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { dot(a, b) / denominator }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_parallel_orthogonal_and_opposite_vectors() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let twice: Vec<f32> = a.iter().map(|x| x * 2.0).collect();
        assert!((cosine(&a, &twice) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert!((cosine(&[1.0, 0.0], &[-3.0, 0.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn normalize_makes_unit_vectors() {
        let mut v = vec![3.0, 4.0, 0.0, 0.0, 0.0, 12.0];
        normalize(&mut v);
        assert!((norm(&v) - 1.0).abs() < 1e-6);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }
}
