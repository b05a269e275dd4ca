//! Work shared among threads: two halves of a pass on two threads (or one after the other),
//! tasks of equal work, and scratch kept per thread.

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
