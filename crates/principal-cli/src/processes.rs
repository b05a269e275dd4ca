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

/// What an MPI launcher told this process in its environment: its rank and the job's size,
/// where the launcher gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub rank: Option<usize>,
    pub size: Option<usize>,
}

impl Launch {
    /// Read from the variables that Open MPI's mpirun (`OMPI_COMM_WORLD_*`), MPICH's Hydra and
    /// Slurm's `srun --mpi=pmi2` (`PMI_*`) and PMIx launchers (`PMIX_RANK`, with Slurm's
    /// `SLURM_NTASKS`) set; `None` when no launcher started this process.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
        let number = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok());
        let launched = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"]
            .iter()
            .any(|name| var(name).is_some());
        launched.then(|| Launch {
            rank: number("OMPI_COMM_WORLD_RANK")
                .or_else(|| number("PMI_RANK"))
                .or_else(|| number("PMIX_RANK")),
            size: number("OMPI_COMM_WORLD_SIZE")
                .or_else(|| number("PMI_SIZE"))
                .or_else(|| var("PMIX_RANK").and(number("SLURM_NTASKS"))),
        })
    }

    /// Whether this is one of several processes (a rank above 0 says so without a size).
    #[cfg_attr(feature = "mpi", allow(dead_code))]
    pub fn is_one_of_many(&self) -> bool {
        self.size.is_some_and(|s| s > 1) || self.rank.is_some_and(|r| r > 0)
    }
}

/// This process's launch, from its environment.
pub fn launch() -> Option<Launch> {
    Launch::from_env(|name| std::env::var(name).ok())
}

/// Why a build without MPI refuses to run as one of several processes: each would do the
/// whole work alone and write the same outputs.
#[cfg_attr(feature = "mpi", allow(dead_code))]
pub fn without_mpi_message(launch: &Launch) -> String {
    let of = match (launch.rank, launch.size) {
        (Some(r), Some(s)) => format!(" as rank {r} of {s}"),
        (Some(r), None) => format!(" as rank {r}"),
        (None, Some(s)) => format!(" as one of {s} processes"),
        (None, None) => String::new(),
    };
    format!(
        "this principal was built without MPI, but an MPI launcher (mpirun, srun) started \
         it{of}: every process would do the whole work alone and write the same outputs; \
         build it with `cargo build --release -p principal-cli --features mpi`, or run one \
         process"
    )
}

impl Processes {
    /// One process; or, when built with `mpi` and started by an MPI launcher, the job's ranks
    /// (a panic on any rank then ends the whole job instead of leaving the others waiting).
    /// Built without `mpi` and started as one of several processes, an error: the rank-0
    /// process (or one whose rank is unknown) gets the message to print, the others `None`.
    pub fn start() -> Result<Processes, Option<String>> {
        #[cfg(feature = "mpi")]
        if launch().is_some() {
            let (collective, universe) = crate::mpi::start();
            return Ok(Processes {
                collective: Box::new(collective),
                _universe: Some(universe),
            });
        }
        #[cfg(not(feature = "mpi"))]
        if let Some(launch) = launch().filter(Launch::is_one_of_many) {
            return Err((launch.rank.unwrap_or(0) == 0).then(|| without_mpi_message(&launch)));
        }
        Ok(Processes {
            collective: Box::new(SingleProcess),
            #[cfg(feature = "mpi")]
            _universe: None,
        })
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn launch_from(vars: &[(&str, &str)]) -> Option<Launch> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Launch::from_env(|name| vars.get(name).cloned())
    }

    /// The launchers' variables give the rank and size; a plain run has none; one process
    /// started by a launcher is not one of many, and a rank above 0 is even without a size.
    #[test]
    fn launchers_are_recognised_by_their_variables() {
        assert_eq!(
            launch_from(&[("PATH", "/bin"), ("SLURM_NTASKS", "4")]),
            None
        );
        let open_mpi = launch_from(&[("OMPI_COMM_WORLD_SIZE", "3"), ("OMPI_COMM_WORLD_RANK", "2")]);
        assert_eq!(
            open_mpi,
            Some(Launch {
                rank: Some(2),
                size: Some(3)
            })
        );
        let hydra = launch_from(&[("PMI_RANK", "0"), ("PMI_SIZE", "8")]).unwrap();
        assert_eq!((hydra.rank, hydra.size), (Some(0), Some(8)));
        let pmix = launch_from(&[("PMIX_RANK", "1"), ("SLURM_NTASKS", "4")]).unwrap();
        assert_eq!((pmix.rank, pmix.size), (Some(1), Some(4)));
        let pmix_alone = launch_from(&[("PMIX_RANK", "3")]).unwrap();
        assert_eq!((pmix_alone.rank, pmix_alone.size), (Some(3), None));
        assert!(open_mpi.unwrap().is_one_of_many());
        assert!(hydra.is_one_of_many());
        assert!(pmix_alone.is_one_of_many());
        let single = launch_from(&[("OMPI_COMM_WORLD_SIZE", "1"), ("OMPI_COMM_WORLD_RANK", "0")]);
        assert!(!single.unwrap().is_one_of_many());
        assert!(!launch_from(&[("PMIX_RANK", "0")]).unwrap().is_one_of_many());
    }

    #[test]
    fn the_refusal_says_which_process_and_how_to_build() {
        let message = without_mpi_message(&Launch {
            rank: Some(0),
            size: Some(3),
        });
        assert!(message.contains("built without MPI"), "{message}");
        assert!(message.contains("as rank 0 of 3"), "{message}");
        assert!(message.contains("--features mpi"), "{message}");
    }
}
