//! Which processes run this command: this one alone, or — built with the `mpi` feature and
//! started by `mpirun` or Slurm's `srun` — every rank of an MPI job, each reading its own part
//! of the inputs. Only rank 0 writes files and prints.

use principal::{Collective, SingleProcess};

/// The processes running this command, and the collective operations between them.
pub struct Processes {
    collective: Box<dyn Collective>,
    /// Keeps MPI initialized until the command has finished (finalized on drop).
    #[cfg(feature = "mpi")]
    _universe: Option<mpi::environment::Universe>,
}

impl Processes {
    /// One process; or, when built with `mpi` and started by an MPI launcher, the job's ranks
    /// (a panic on any rank then ends the whole job instead of leaving the others waiting).
    pub fn start() -> Processes {
        #[cfg(feature = "mpi")]
        if crate::mpi::launched() {
            let (collective, universe) = crate::mpi::start();
            return Processes {
                collective: Box::new(collective),
                _universe: Some(universe),
            };
        }
        Processes {
            collective: Box::new(SingleProcess),
            #[cfg(feature = "mpi")]
            _universe: None,
        }
    }

    pub fn collective(&self) -> &dyn Collective {
        &*self.collective
    }

    /// Whether this process prints and writes: the only one, or rank 0.
    pub fn is_root(&self) -> bool {
        self.collective.rank() == 0
    }

    /// Refuses a command that runs in one process only when several were started.
    pub fn one_only(&self, command: &str) -> anyhow::Result<()> {
        let size = self.collective.size();
        if size > 1 {
            anyhow::bail!(
                "`principal {command}` runs in one process, but {size} were started; over \
                 several processes (mpirun, srun) run `fit` or `transform`"
            );
        }
        Ok(())
    }
}
