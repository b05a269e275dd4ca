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

/// What a launcher told this process in its environment: its rank and the job's size, where
/// the launcher gives them, and whether it is an MPI launch (a process-management interface to
/// start MPI with) or only a Slurm step of several tasks (`srun -n N` with no `--mpi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub rank: Option<usize>,
    pub size: Option<usize>,
    pub mpi: bool,
}

impl Launch {
    /// Read from the variables that Open MPI's mpirun (`OMPI_COMM_WORLD_*`), MPICH's Hydra and
    /// Slurm's `srun --mpi=pmi2` (`PMI_*`) and PMIx launchers (`PMIX_RANK`) set, and for a
    /// Slurm step Slurm's own (`SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`: set for the tasks of
    /// `srun`, not in a batch script, whose `SLURM_NTASKS` is the allocation's). `None` when
    /// no launcher started this process.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
        let number = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok());
        let mpi = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"]
            .iter()
            .any(|name| var(name).is_some());
        let slurm_step = number("SLURM_STEP_NUM_TASKS");
        (mpi || slurm_step.is_some()).then(|| Launch {
            rank: number("OMPI_COMM_WORLD_RANK")
                .or_else(|| number("PMI_RANK"))
                .or_else(|| number("PMIX_RANK"))
                .or_else(|| number("SLURM_PROCID")),
            size: number("OMPI_COMM_WORLD_SIZE")
                .or_else(|| number("PMI_SIZE"))
                .or(slurm_step),
            mpi,
        })
    }

    /// Whether this is one of several processes (a rank above 0 says so without a size).
    pub fn is_one_of_many(&self) -> bool {
        self.size.is_some_and(|s| s > 1) || self.rank.is_some_and(|r| r > 0)
    }
}

/// This process's launch, from its environment.
pub fn launch() -> Option<Launch> {
    Launch::from_env(|name| std::env::var(name).ok())
}

/// Why this process refuses to run as one of several that cannot work together — a build
/// without MPI under a launcher, or any build in a Slurm step without an MPI plugin: each
/// would do the whole work alone and write the same outputs.
pub fn alone_among_many_message(launch: &Launch) -> String {
    let of = match (launch.rank, launch.size) {
        (Some(r), Some(s)) => format!(" as rank {r} of {s}"),
        (Some(r), None) => format!(" as rank {r}"),
        (None, Some(s)) => format!(" as one of {s} processes"),
        (None, None) => String::new(),
    };
    let consequence = "every process would do the whole work alone and write the same outputs";
    if cfg!(feature = "mpi") {
        format!(
            "srun started this{of} with no MPI plugin (no PMI in the environment): \
             {consequence}; run `srun --mpi=pmix …` (or set MpiDefault=pmix), or run one process"
        )
    } else {
        format!(
            "this principal was built without MPI, but a launcher (mpirun, srun) started \
             it{of}: {consequence}; build it with `cargo build --release -p principal-cli \
             --features mpi`, or run one process"
        )
    }
}

impl Processes {
    /// One process; or, when built with `mpi` and started by an MPI launcher, the job's ranks
    /// (a panic on any rank then ends the whole job instead of leaving the others waiting).
    /// Started as one of several processes that cannot work together (built without `mpi`,
    /// or `srun` with no MPI plugin), an error: the rank-0 process (or one whose rank is
    /// unknown) gets the message to print, the others `None`.
    pub fn start() -> Result<Processes, Option<String>> {
        let launch = launch();
        #[cfg(feature = "mpi")]
        if launch.is_some_and(|l| l.mpi) {
            let (collective, universe) = crate::mpi::start();
            return Ok(Processes {
                collective: Box::new(collective),
                _universe: Some(universe),
            });
        }
        if let Some(launch) = launch.filter(Launch::is_one_of_many) {
            return Err((launch.rank.unwrap_or(0) == 0).then(|| alone_among_many_message(&launch)));
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

/// Every rank's outcome of opening its part of the input, agreed before any rank reads: a
/// rank learns of another's failure to open rather than waiting for it in the first pass.
pub(crate) fn agree_opened<T, E: std::fmt::Display>(
    collective: &dyn Collective,
    opened: &std::result::Result<T, E>,
) -> principal::Result<()> {
    let outcome = opened
        .as_ref()
        .map(drop)
        .map_err(|e| principal::PcaError::Source(anyhow::Error::msg(e.to_string()).into()));
    principal::agree_outcome(collective, outcome)
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

    fn rank_size_mpi(launch: Option<Launch>) -> (Option<usize>, Option<usize>, bool) {
        let l = launch.expect("a launch");
        (l.rank, l.size, l.mpi)
    }

    /// The launchers' variables give the rank and size (as seen under Open MPI's mpirun and
    /// Slurm 22.05's srun and sbatch); a plain run and a batch script have none; one process
    /// started by a launcher is not one of many, and a rank above 0 is even without a size.
    #[test]
    fn launchers_are_recognised_by_their_variables() {
        assert_eq!(launch_from(&[("PATH", "/bin")]), None);
        // A batch script in an allocation of 4 tasks is one process.
        let batch = [("SLURM_NTASKS", "4"), ("SLURM_PROCID", "0")];
        assert_eq!(launch_from(&batch), None);
        let open_mpi = [("OMPI_COMM_WORLD_SIZE", "3"), ("OMPI_COMM_WORLD_RANK", "2")];
        assert_eq!(
            rank_size_mpi(launch_from(&open_mpi)),
            (Some(2), Some(3), true)
        );
        let hydra = [("PMI_RANK", "0"), ("PMI_SIZE", "8")];
        assert_eq!(rank_size_mpi(launch_from(&hydra)), (Some(0), Some(8), true));
        // srun --mpi=pmix: the step's tasks, not the allocation's.
        let pmix = [
            ("PMIX_RANK", "1"),
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_NTASKS", "8"),
        ];
        assert_eq!(rank_size_mpi(launch_from(&pmix)), (Some(1), Some(4), true));
        let pmix_alone = [("PMIX_RANK", "3")];
        assert_eq!(
            rank_size_mpi(launch_from(&pmix_alone)),
            (Some(3), None, true)
        );
        // srun with no MPI plugin: Slurm's variables only.
        let tasks = [
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "3"),
            ("SLURM_NTASKS", "3"),
        ];
        assert_eq!(
            rank_size_mpi(launch_from(&tasks)),
            (Some(0), Some(3), false)
        );
        for many in [&open_mpi[..], &hydra, &pmix, &pmix_alone, &tasks] {
            assert!(launch_from(many).unwrap().is_one_of_many(), "{many:?}");
        }
        let single = [("OMPI_COMM_WORLD_SIZE", "1"), ("OMPI_COMM_WORLD_RANK", "0")];
        let one_task = [("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "1")];
        for one in [&single[..], &one_task, &[("PMIX_RANK", "0")]] {
            assert!(!launch_from(one).unwrap().is_one_of_many(), "{one:?}");
        }
    }

    /// The refusal names the process and the remedy for this build.
    #[test]
    fn the_refusal_says_which_process_and_what_to_do() {
        let message = alone_among_many_message(&Launch {
            rank: Some(0),
            size: Some(3),
            mpi: cfg!(not(feature = "mpi")),
        });
        assert!(message.contains("as rank 0 of 3"), "{message}");
        assert!(message.contains("do the whole work alone"), "{message}");
        if cfg!(feature = "mpi") {
            assert!(message.contains("srun --mpi=pmix"), "{message}");
        } else {
            assert!(message.contains("built without MPI"), "{message}");
            assert!(message.contains("--features mpi"), "{message}");
        }
    }
}
