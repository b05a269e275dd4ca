//! Several processes fitting one model: the few collective operations a distributed fit needs
//! ([`Collective`]), the single-process case ([`SingleProcess`]), and the agreement every rank
//! reaches before each reduction, so that a failure on one rank stops all of them with its
//! message instead of leaving the others waiting.
//!
//! No solver knows about processes: the fit reduces what each rank accumulated over its own
//! rows (the moments, the column sums, each pass's D×L block) through this trait, and
//! everything after a reduction is computed from the same bits on every rank.

use faer::MatRef;

use crate::data::{ChunkSource, RowsAt};
use crate::error::{PcaError, Result};
use crate::real::ChunkRef;

/// The collective operations a fit over several processes (ranks) uses; an MPI communicator
/// implements it in the command-line tool, [`SingleProcess`] is the one-process case.
///
/// Every rank calls the same operations in the same order (a fit guarantees it); a rank whose
/// own work failed tells the others at once ([`Collective::announce_failure`]) and still joins
/// the next agreement, so no rank ever waits for a rank that has given up.
///
/// ```
/// use principal::{Collective, SingleProcess};
/// let one = SingleProcess;
/// let mut values = [1.0, 2.0];
/// one.sum(&mut values);
/// assert_eq!((one.rank(), one.size(), values), (0, 1, [1.0, 2.0]));
/// ```
pub trait Collective {
    /// This process's number, from 0.
    fn rank(&self) -> usize;
    /// Number of processes.
    fn size(&self) -> usize;
    /// Replaces `values` on every rank by their element-wise sum over all ranks. Every rank
    /// must receive the same bits (for MPI: reduce to one rank, then broadcast; an allreduce
    /// may round differently on different ranks), since every rank then computes on them.
    fn sum(&self, values: &mut [f64]);
    /// Replaces `values` on every rank by those of rank `root`.
    fn broadcast(&self, values: &mut [f64], root: usize);
    /// Replaces `bytes` on every rank by those of rank `root` (their length may differ).
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize);
    /// Tells every other rank, without waiting for them, that this rank has failed. Called once
    /// at most, just before the agreement that reports the failure.
    fn announce_failure(&self);
    /// Whether another rank has announced a failure. Cheap: polled between chunks, so that the
    /// other ranks stop reading within a chunk of the failure.
    fn failure_announced(&self) -> bool;
    /// Called on every rank once the ranks in `failed` are known to have announced a failure:
    /// an implementation receives whatever announcements are still in flight from them.
    fn acknowledge_failures(&self, failed: &[usize]) {
        let _ = failed;
    }
}

/// One process: every collective operation leaves its values as they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SingleProcess;

impl Collective for SingleProcess {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum(&self, _: &mut [f64]) {}
    fn broadcast(&self, _: &mut [f64], _: usize) {}
    fn broadcast_bytes(&self, _: &mut Vec<u8>, _: usize) {}
    fn announce_failure(&self) {}
    fn failure_announced(&self) -> bool {
        false
    }
}

/// The points of a distributed fit at which the ranks agree, in the order a fit reaches them.
/// Each agreement compares them: ranks at different points have gone out of step (a bug, or
/// builds that round differently), which is an error rather than a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// A caller's own work before a fit ([`agree_outcome`]).
    Prepare = 6,
    /// The number of features of every rank's data.
    Features = 1,
    /// The moment pass (count, mean, centred cross-products).
    Moments,
    /// The pass of per-feature sums (iterative solvers).
    Columns,
    /// One pass of an iterative solver: `Xsᵀ Xs P`.
    Apply,
    /// The end of the fit.
    Done,
}

impl Stage {
    fn name(code: f64) -> &'static str {
        match code as u32 {
            1 => "checking the features",
            2 => "the moment pass",
            3 => "the pass of column sums",
            4 => "a pass of the iterative solver",
            5 => "the end of the fit",
            6 => "the end of its own preparation",
            _ => "an unknown stage",
        }
    }
}

/// What a rank brings to an agreement: done; failed (and announced); stopped by another
/// rank's announcement; or failed with an error every rank already knows or reaches alike
/// (reported at the end of a fit, without an announcement).
const OK: f64 = 0.0;
const FAILED: f64 = 1.0;
const STOPPED: f64 = 2.0;
const REPORTED: f64 = 3.0;

/// Every rank's outcome of its own work since the last agreement, at `stage`: `Ok` with each
/// rank's `value` (a count: exact in f64 below 2⁵³) on every rank when all succeeded; otherwise
/// an error on every rank — the failing rank's own, and on the others its message as
/// [`PcaError::OtherRank`] (the lowest-numbered failing rank's, when several failed).
pub(crate) fn agree(
    collective: &dyn Collective,
    stage: Stage,
    local: Result<usize>,
) -> Result<Vec<usize>> {
    let status = match &local {
        Ok(_) => OK,
        Err(PcaError::Stopped) => STOPPED,
        Err(_) => FAILED,
    };
    exchange(collective, stage, status, local)
}

/// The number of features every rank's data has, the same on every rank: an error naming the
/// first rank whose width differs from rank 0's.
pub(crate) fn agree_width(collective: &dyn Collective, width: usize) -> Result<usize> {
    let widths = agree(collective, Stage::Features, Ok(width))?;
    if let Some(r) = widths.iter().position(|&w| w != widths[0]) {
        return Err(PcaError::OtherRank {
            rank: r,
            message: format!(
                "its data has {} features where rank 0's has {}",
                widths[r], widths[0]
            ),
        });
    }
    Ok(widths[0])
}

/// Every rank's outcome of its own work before a distributed fit (opening its files, say): `Ok`
/// on every rank when all succeeded, otherwise an error on every rank — the failing rank's
/// own, and on the others its message ([`PcaError::OtherRank`]). Every rank must call it, at
/// the same point; a rank that failed must call it rather than return, or the others wait.
///
/// ```
/// use principal::{agree_outcome, PcaError, SingleProcess};
/// assert!(agree_outcome(&SingleProcess, Ok(())).is_ok());
/// let failed = Err(PcaError::Source("cannot open part-7.npy".into()));
/// assert_eq!(agree_outcome(&SingleProcess, failed).unwrap_err().to_string(), "cannot open part-7.npy");
/// ```
pub fn agree_outcome(collective: &dyn Collective, local: Result<()>) -> Result<()> {
    agree(collective, Stage::Prepare, local.map(|()| 0)).map(drop)
}

/// The agreement that ends a distributed fit: every rank has finished (a rank still in a pass,
/// out of step, shows here rather than as a hang at exit), and a rank whose fit failed after
/// the last agreement — with an error that every rank normally reaches alike, such as too many
/// components for the whole data — makes every rank fail with its message.
pub(crate) fn agree_end<T>(collective: &dyn Collective, outcome: Result<T>) -> Result<T> {
    match outcome {
        Ok(value) => exchange(collective, Stage::Done, OK, Ok(0)).map(|_| value),
        Err(e) => match exchange(collective, Stage::Done, REPORTED, Err(e)) {
            Err(e) => Err(e),
            Ok(_) => unreachable!("an agreement with an error fails"),
        },
    }
}

fn exchange(
    collective: &dyn Collective,
    stage: Stage,
    status: f64,
    local: Result<usize>,
) -> Result<Vec<usize>> {
    let (p, rank) = (collective.size(), collective.rank());
    if p == 1 {
        return local.map(|v| vec![v]);
    }
    if status == FAILED {
        collective.announce_failure();
    }
    // Three slots per rank, zero but for this rank's: the sum gathers them all.
    let mut table = vec![0.0; 3 * p];
    table[rank] = status;
    table[p + rank] = stage as u32 as f64;
    table[2 * p + rank] = *local.as_ref().unwrap_or(&0) as f64;
    collective.sum(&mut table);
    let failed: Vec<usize> = (0..p).filter(|&r| table[r] == FAILED).collect();
    if !failed.is_empty() {
        collective.acknowledge_failures(&failed);
    }
    let reported = (0..p).find(|&r| table[r] == REPORTED);
    if let Some(first) = failed.first().copied().or(reported) {
        let mut message = match &local {
            Err(e) if rank == first => e.to_string().into_bytes(),
            _ => Vec::new(),
        };
        collective.broadcast_bytes(&mut message, first);
        return Err(match local {
            // A rank keeps its own error (typed, for its caller), the others get the message.
            Err(e) if rank == first || status == REPORTED => e,
            _ => PcaError::OtherRank {
                rank: first,
                message: String::from_utf8_lossy(&message).into_owned(),
            },
        });
    }
    if let Some(r) = (0..p).find(|&r| table[p + r] != table[p]) {
        return Err(PcaError::OutOfStep {
            rank,
            detail: format!(
                "rank 0 reached {} and rank {r} {}",
                Stage::name(table[p]),
                Stage::name(table[p + r])
            ),
        });
    }
    if (0..p).any(|r| table[r] == STOPPED) {
        // Stopped with no failure to agree on: only an implementation's fault can do this.
        return Err(PcaError::Stopped);
    }
    Ok((0..p).map(|r| table[2 * p + r] as usize).collect())
}

/// A rank's part of the data, checked between chunks for another rank's failure: the pass
/// stops with [`PcaError::Stopped`] within a chunk of it, instead of reading on to the end.
pub(crate) struct Watched<'a> {
    pub(crate) source: &'a mut dyn ChunkSource,
    pub(crate) collective: &'a dyn Collective,
}

impl ChunkSource for Watched<'_> {
    fn n_features(&self) -> usize {
        self.source.n_features()
    }

    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
        let collective = self.collective;
        unless_stopped(collective)?;
        self.source.pass(&mut |chunk| {
            unless_stopped(collective)?;
            visit(chunk)
        })
    }

    /// Forwarded, with another rank's failure checked before the pass only: a collective is
    /// asked from one thread, and the threads that read by position are the solver's. A pass
    /// by position is one read of this rank's part, so the agreement after it stops the rank
    /// soon enough.
    fn pass_by_position(
        &mut self,
        visit: &mut dyn FnMut(&dyn RowsAt) -> Result<()>,
    ) -> Option<Result<()>> {
        if let Err(stopped) = unless_stopped(self.collective) {
            return Some(Err(stopped));
        }
        self.source.pass_by_position(visit)
    }

    /// Forwarded, with another rank's failure checked between chunks as in [`Self::pass`].
    fn pass_bytes(
        &mut self,
        visit: &mut dyn FnMut(MatRef<'_, u8>) -> Result<()>,
    ) -> Option<Result<()>> {
        let collective = self.collective;
        if let Err(stopped) = unless_stopped(collective) {
            return Some(Err(stopped));
        }
        self.source.pass_bytes(&mut |chunk| {
            unless_stopped(collective)?;
            visit(chunk)
        })
    }
}

/// [`PcaError::Stopped`] once another rank has announced a failure.
fn unless_stopped(collective: &dyn Collective) -> Result<()> {
    if collective.failure_announced() {
        return Err(PcaError::Stopped);
    }
    Ok(())
}

/// Every rank's `n_r` rows of mean `μ_r` combined: the total count N, the mean μ over all
/// rows, and this rank's `δ_r = μ_r − μ`. With these, Chan's pairwise update of a scatter
/// matrix generalises to any number of parts, `M = Σ_r (M_r + n_r δ_r δ_rᵀ)`: a single sum of
/// centred terms, never `Σxxᵀ − Nμμᵀ`. The mean is computed relative to the first non-empty
/// rank's mean, so an offset of 1e6 costs no more than in a pairwise merge. `counts` holds
/// every rank's `n_r` (from the agreement before).
pub(crate) fn mean_across(
    collective: &dyn Collective,
    counts: &[usize],
    mean: &[f64],
) -> (usize, Vec<f64>, Vec<f64>) {
    let rank = collective.rank();
    let n: usize = counts.iter().sum();
    let own = counts[rank];
    let Some(reference_rank) = counts.iter().position(|&c| c > 0) else {
        return (0, vec![0.0; mean.len()], vec![0.0; mean.len()]);
    };
    let mut reference = mean.to_vec();
    collective.broadcast(&mut reference, reference_rank);
    let mut shift: Vec<f64> = mean
        .iter()
        .zip(&reference)
        .map(|(m, c)| if own > 0 { own as f64 * (m - c) } else { 0.0 })
        .collect();
    collective.sum(&mut shift);
    let total: Vec<f64> = reference
        .iter()
        .zip(&shift)
        .map(|(c, s)| c + s / n as f64)
        .collect();
    let delta = mean
        .iter()
        .zip(&total)
        .map(|(m, t)| if own > 0 { m - t } else { 0.0 })
        .collect();
    (n, total, delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_agrees_with_itself() {
        let one = SingleProcess;
        assert_eq!(agree(&one, Stage::Moments, Ok(7)).unwrap(), [7]);
        let e = agree(&one, Stage::Moments, Err(PcaError::ZeroComponents)).unwrap_err();
        assert!(matches!(e, PcaError::ZeroComponents));
        let (n, mean, delta) = mean_across(&one, &[3], &[1e6, 2.0]);
        assert_eq!((n, mean, delta), (3, vec![1e6, 2.0], vec![0.0, 0.0]));
    }
}
