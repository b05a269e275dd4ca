//! Work shared among threads: two halves of a pass on two threads (or one after the other),
//! tasks of equal work, and scratch kept per thread.

use faer::Par;

/// How many pieces faer splits its parallel work into: a constant, not the number of threads.
/// faer's matrix–vector products split their rows by the number of pieces and round
/// differently when split differently, and its reductions to tridiagonal form, its QR and
/// its Krylov–Schur are built on them; with a fixed number the model is the same bits on any
/// number of threads (rayon runs the pieces on the threads there are). Eight cost nothing
/// measurable on two threads against two (faer 0.24: the tridiagonal reduction and
/// eigenvectors of 784×784 and 1,500×1,500 matrices, their matrix–vector products; 16 and
/// more slowed the 784×784 reduction by a quarter) and let these routines use eight threads.
pub const FAER_PIECES: usize = 8;

/// The `Par` of principal's calls to faer: [`FAER_PIECES`] pieces (and [`fix_faer_split`]).
pub(crate) fn faer_par() -> Par {
    fix_faer_split();
    Par::rayon(FAER_PIECES)
}

/// Makes [`FAER_PIECES`] pieces faer's global parallelism, which its decompositions and
/// operators without a `Par` argument (`Mat::thin_svd`, `Mat::qr`, `&a * &b`, …) read, so that
/// they too give the same bits on any number of threads. Every public fit calls it first; a
/// program that uses principal's models without fitting in the same process (or faer itself)
/// calls it at its start, as the command-line tool and the Python module do. Setting faer's
/// global parallelism to something else afterwards gives up that guarantee.
///
/// ```
/// use principal::faer::{Par, get_global_parallelism};
///
/// principal::fix_faer_split();
/// assert_eq!(get_global_parallelism(), Par::rayon(principal::FAER_PIECES));
/// ```
pub fn fix_faer_split() {
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| faer::set_global_parallelism(Par::rayon(FAER_PIECES)));
}

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

/// `buffer`'s first `len` values, grown (never shrunk) to hold them: scratch kept from block to
/// block, so that it is neither allocated nor zeroed again.
pub(crate) fn room<E: Copy + Default>(buffer: &mut Vec<E>, len: usize) -> &mut [E] {
    if buffer.len() < len {
        buffer.resize(len, E::default());
    }
    &mut buffer[..len]
}

/// Runs `run` on this thread's scratch in `key`, or on fresh scratch of its own when this
/// thread is already inside a `run` (a rayon worker that, while it waits inside one product,
/// takes a task of another).
pub(crate) fn with_scratch<S: Default, R>(
    key: &'static std::thread::LocalKey<std::cell::RefCell<S>>,
    run: impl FnOnce(&mut S) -> R,
) -> R {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        Err(_) => run(&mut S::default()),
    })
}

/// Where `tasks` tasks of consecutive items (`0..items`) start, and the end (`items`): each
/// task takes items until their `work` reaches its equal share of the whole, so that uneven
/// items (the long top rows of a triangle) still give tasks of about equal work.
pub(crate) fn equal_work_starts(
    items: usize,
    tasks: usize,
    work: impl Fn(usize) -> usize,
) -> Vec<usize> {
    let total: usize = (0..items).map(&work).sum();
    let share = total.div_ceil(tasks);
    let mut starts = vec![0];
    let mut done = 0;
    for i in 0..items {
        done += work(i);
        if done >= share * starts.len() && i + 1 < items {
            starts.push(i + 1);
        }
    }
    starts.push(items);
    starts
}

/// A row-major `product` of rows of `width` values cut into the tasks' rows: task `i` takes the
/// rows of items `starts[i]..starts[i + 1]`, `height` rows an item (the last item's rows cut
/// at the product's end); each with its first item.
pub(crate) fn rows_of_tasks<'a, T>(
    product: &'a mut [T],
    starts: &[usize],
    height: usize,
    width: usize,
) -> Vec<(usize, &'a mut [T])> {
    let all_rows = product.len() / width;
    let mut tasks = Vec::with_capacity(starts.len() - 1);
    let mut rest = product;
    for bounds in starts.windows(2) {
        let rows = (bounds[1] * height).min(all_rows) - bounds[0] * height;
        let (task, after) = rest.split_at_mut(rows * width);
        tasks.push((bounds[0], task));
        rest = after;
    }
    tasks
}
