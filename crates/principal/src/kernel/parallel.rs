//! Two halves of a pass on two threads, or one after the other.

use faer::Par;

/// Both halves of a split pass, on two threads when `par` allows. The split itself depends on
/// the shape only, so the sums (and the model) are the same bits on any number of threads.
pub(crate) fn join<A: Send, B: Send>(
    par: Par,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if par.degree() > 1 {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}
