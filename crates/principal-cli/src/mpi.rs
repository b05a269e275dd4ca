//! MPI (feature `mpi`): the job's ranks as a [`principal::Collective`], over the `mpi` crate
//! (rsmpi) and the system's MPI library (Open MPI on Debian).
//!
//! Sums are reduced to rank 0 and broadcast, so every rank gets the same bits (an allreduce may
//! round differently on different ranks, and every rank computes on the result). A rank that
//! fails sends a one-byte notice to every other rank at once; the others look for it between
//! chunks (a non-blocking probe) and stop reading, so the job ends within a chunk of the
//! failure with the failing rank's message rather than when every rank has read its part.
//! A panic (a bug) ends the job through `MPI_Abort`; a rank that dies (out of memory) is ended
//! with the job by the launcher.

use std::cell::RefCell;
use std::io::Write;

use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The tag of failure notices.
const FAILURE: mpi::Tag = 0x0fa1;

/// Initializes MPI; a panic on this rank from now on aborts the whole job.
pub fn start() -> (MpiWorld, Universe) {
    let universe = mpi::initialize().expect("MPI is initialized once");
    let world = universe.world();
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "error: internal error (a bug in principal; please report it): {info}"
        );
        SimpleCommunicator::world().abort(70);
    }));
    let size = world.size() as usize;
    (
        MpiWorld {
            world,
            seen: RefCell::new(vec![false; size]),
        },
        universe,
    )
}

/// The ranks of `MPI_COMM_WORLD`.
pub struct MpiWorld {
    world: SimpleCommunicator,
    /// The ranks whose failure notice has been received.
    seen: RefCell<Vec<bool>>,
}

impl principal::Collective for MpiWorld {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn sum(&self, values: &mut [f64]) {
        let root = self.world.process_at_rank(0);
        if self.world.rank() == 0 {
            let mut total = vec![0.0; values.len()];
            root.reduce_into_root(&*values, &mut total[..], SystemOperation::sum());
            values.copy_from_slice(&total);
        } else {
            root.reduce_into(&*values, SystemOperation::sum());
        }
        root.broadcast_into(values);
    }

    fn broadcast(&self, values: &mut [f64], root: usize) {
        self.world
            .process_at_rank(root as mpi::Rank)
            .broadcast_into(values);
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) {
        let root = self.world.process_at_rank(root as mpi::Rank);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
    }

    fn announce_failure(&self) {
        let me = self.world.rank();
        for r in (0..self.world.size()).filter(|&r| r != me) {
            // One byte goes out eagerly: the send returns at once.
            self.world
                .process_at_rank(r)
                .send_with_tag(&[1u8][..], FAILURE);
        }
    }

    fn failure_announced(&self) -> bool {
        while let Some(probed) = self
            .world
            .any_process()
            .immediate_matched_probe_with_tag(FAILURE)
        {
            let source = probed.1.source_rank() as usize;
            let _: (Vec<u8>, _) = probed.matched_receive_vec();
            self.seen.borrow_mut()[source] = true;
        }
        self.seen.borrow().iter().any(|&s| s)
    }

    fn acknowledge_failures(&self, failed: &[usize]) {
        let me = self.world.rank() as usize;
        for &r in failed.iter().filter(|&&r| r != me) {
            if !self.seen.borrow()[r] {
                let _: (Vec<u8>, _) = self
                    .world
                    .process_at_rank(r as mpi::Rank)
                    .receive_vec_with_tag(FAILURE);
                self.seen.borrow_mut()[r] = true;
            }
        }
    }
}
