use faer::dyn_stack::{MemBuffer, MemStack};
use faer::{Mat, Par};
fn bits(m: &Mat<f64>) -> u64 {
    let mut h = 0u64;
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            h = h
                .wrapping_mul(1099511628211)
                .wrapping_add(m[(i, j)].to_bits());
        }
    }
    h
}
fn main() {
    let mut s = 1u64;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64) / ((1u64 << 53) as f64) - 0.5
    };
    for n in [300usize, 400, 900, 1200] {
        let x = Mat::<f64>::from_fn(n, n, |_, _| rnd());
        let a = Mat::<f64>::from_fn(n, n, |i, j| x[(i.max(j), i.min(j))]);
        let mut hs = Vec::new();
        for threads in [1, 2, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let h = pool.install(|| {
                let par = Par::rayon(8);
                let mut t = a.clone();
                let block =
                    faer::linalg::qr::no_pivoting::factor::recommended_block_size::<f64>(n, n);
                let mut hh = Mat::<f64>::zeros(block, n - 1);
                let mut buf = MemBuffer::new(faer::linalg::evd::self_adjoint_evd_scratch::<f64>(
                    n,
                    faer::linalg::evd::ComputeEigenvectors::Yes,
                    par,
                    Default::default(),
                ));
                faer::linalg::evd::tridiag::tridiag_in_place(
                    t.as_mut(),
                    hh.as_mut(),
                    par,
                    MemStack::new(&mut buf),
                    Default::default(),
                );
                let h1 = bits(&t) & 0xffff;
                let diag = faer::Col::<f64>::from_fn(n, |i| t[(i, i)]);
                let off =
                    faer::Col::<f64>::from_fn(n, |i| if i + 1 < n { t[(i + 1, i)] } else { 0.0 });
                let mut sv = faer::Col::<f64>::zeros(n);
                let mut u = Mat::<f64>::zeros(n, n);
                faer::linalg::evd::tridiagonal_self_adjoint_evd(
                    diag.as_diagonal(),
                    off.as_diagonal(),
                    sv.as_mut().as_diagonal_mut(),
                    Some(u.as_mut()),
                    par,
                    MemStack::new(&mut buf),
                    Default::default(),
                )
                .unwrap();
                let h2 = bits(&u) & 0xffff;
                faer::set_global_parallelism(par);
                let e = a.self_adjoint_eigen(faer::Side::Lower).unwrap();
                let h3 = bits(&e.U().to_owned()) & 0xffff;
                let mut l = Mat::<f64>::zeros(n, n);
                faer::linalg::matmul::matmul(
                    l.as_mut(),
                    faer::Accum::Replace,
                    a.as_ref(),
                    x.as_ref(),
                    1.0,
                    par,
                );
                let mut c = a.clone();
                for i in 0..n {
                    c[(i, i)] += 2.0 * n as f64;
                }
                let mut buf2 = MemBuffer::new(
                    faer::linalg::cholesky::llt::factor::cholesky_in_place_scratch::<f64>(
                        n,
                        par,
                        Default::default(),
                    ),
                );
                faer::linalg::cholesky::llt::factor::cholesky_in_place(
                    c.as_mut(),
                    Default::default(),
                    par,
                    MemStack::new(&mut buf2),
                    Default::default(),
                )
                .unwrap();
                (h1, h2, h3, bits(&c) & 0xffff)
            });
            hs.push(h);
        }
        println!(
            "n {n}: (tridiag, trid-evd, self_adjoint_eigen, chol) by pool 1..4: {:x?}",
            hs
        );
    }
}
