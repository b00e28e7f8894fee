//! Principal component analysis for the static-model distillation.
//!
//! The covariance matrix of the token vectors is small (hidden × hidden,
//! 384 × 384 for MiniLM), so a cyclic Jacobi eigenvalue solver in f64 is
//! exact enough and fast, and saves a linear-algebra dependency.

/// Eigen-decomposition of a symmetric `n × n` matrix (row-major).
/// Returns eigenvalues in descending order and the matching unit
/// eigenvectors as rows.
pub fn symmetric_eigen(matrix: &[f64], n: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    assert_eq!(matrix.len(), n * n, "matrix must be n × n");
    let mut a = matrix.to_vec();
    // v holds eigenvectors as columns.
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j].powi(2))
            .sum();
        if off < 1e-22 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let akp = a[k * n + p];
                    let akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let apk = a[p * n + k];
                    let aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let vkp = v[k * n + p];
                    let vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| a[y * n + y].total_cmp(&a[x * n + x]));
    let values = order.iter().map(|&i| a[i * n + i]).collect();
    let vectors = order.iter().map(|&i| (0..n).map(|k| v[k * n + i]).collect()).collect();
    (values, vectors)
}

/// A fitted projection: subtract `mean`, multiply by `components` (rows).
#[derive(Debug, Clone)]
pub struct Pca {
    /// Mean of the input rows.
    pub mean: Vec<f64>,
    /// Principal axes, strongest first, each of input width.
    pub components: Vec<Vec<f64>>,
    /// Variance along each axis.
    pub variances: Vec<f64>,
    /// Total variance of the input (trace of the covariance).
    pub total_variance: f64,
}

impl Pca {
    /// Fits `dims` components to `rows` (all of the same width). Each
    /// component's sign is chosen so that the projection with the largest
    /// magnitude is positive, which makes the result deterministic.
    pub fn fit(rows: &[Vec<f32>], dims: usize) -> Self {
        let n = rows.first().map_or(0, Vec::len);
        let count = rows.len().max(1) as f64;
        let mut mean = vec![0.0_f64; n];
        for row in rows {
            for (m, &x) in mean.iter_mut().zip(row) {
                *m += f64::from(x);
            }
        }
        for m in &mut mean {
            *m /= count;
        }
        let mut covariance = vec![0.0_f64; n * n];
        let mut centred = vec![0.0_f64; n];
        for row in rows {
            for (c, (&x, m)) in centred.iter_mut().zip(row.iter().zip(&mean)) {
                *c = f64::from(x) - m;
            }
            for i in 0..n {
                let ci = centred[i];
                let line = &mut covariance[i * n..(i + 1) * n];
                for (slot, &cj) in line.iter_mut().zip(&centred).skip(i) {
                    *slot += ci * cj;
                }
            }
        }
        for i in 0..n {
            for j in i..n {
                let value = covariance[i * n + j] / (count - 1.0).max(1.0);
                covariance[i * n + j] = value;
                covariance[j * n + i] = value;
            }
        }
        let total_variance = (0..n).map(|i| covariance[i * n + i]).sum();
        let (values, vectors) = symmetric_eigen(&covariance, n);
        let dims = dims.min(n);
        let mut pca =
            Self { mean, components: vectors[..dims].to_vec(), variances: values[..dims].to_vec(), total_variance };
        for axis in 0..dims {
            let strongest = rows
                .iter()
                .map(|row| pca.project_axis(row, axis))
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))
                .unwrap_or(0.0);
            if strongest < 0.0 {
                for x in &mut pca.components[axis] {
                    *x = -*x;
                }
            }
        }
        pca
    }

    fn project_axis(&self, row: &[f32], axis: usize) -> f64 {
        self.components[axis].iter().zip(row.iter().zip(&self.mean)).map(|(c, (&x, m))| c * (f64::from(x) - m)).sum()
    }

    /// Projects one row.
    pub fn project(&self, row: &[f32]) -> Vec<f32> {
        (0..self.components.len()).map(|axis| self.project_axis(row, axis) as f32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigen_decomposition_of_a_known_matrix() {
        // [[2,1],[1,2]] has eigenvalues 3 and 1 with axes (1,1)/√2, (1,-1)/√2.
        let (values, vectors) = symmetric_eigen(&[2.0, 1.0, 1.0, 2.0], 2);
        assert!((values[0] - 3.0).abs() < 1e-12 && (values[1] - 1.0).abs() < 1e-12, "{values:?}");
        assert!((vectors[0][0].abs() - 0.5f64.sqrt()).abs() < 1e-12);
        assert!((vectors[0][0] - vectors[0][1]).abs() < 1e-12);
    }

    #[test]
    fn pca_finds_the_axis_of_largest_spread() {
        // Points along (1, 1) with a little noise on (1, -1).
        let rows: Vec<Vec<f32>> = (0..100)
            .map(|i| {
                let t = i as f32 - 50.0;
                let e = if i % 2 == 0 { 0.1 } else { -0.1 };
                vec![t + e, t - e]
            })
            .collect();
        let pca = Pca::fit(&rows, 1);
        let axis = &pca.components[0];
        assert!((axis[0] - axis[1]).abs() < 1e-3, "{axis:?}");
        assert!(pca.variances[0] > 100.0);
        let projected = pca.project(&rows[99]);
        assert!((projected[0].abs() - 49.5 * 2f32.sqrt()).abs() < 0.1, "{projected:?}");
        // Centred on the mean (-0.5). The sign rule: the largest-magnitude
        // projection (row 0, t = -50) is positive.
        assert!(pca.project(&rows[0])[0] > 70.0);
    }
}
