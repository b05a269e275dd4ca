//! `principal` under `mpirun -n 3` (feature `mpi`): each rank reads its part of the inputs and
//! the model equals one process's to rounding, for covariance, randomized and em, standardized
//! or not, under an offset of 1e6; only rank 0 writes and prints; `transform` writes one part
//! per rank; a failing rank ends the job promptly with its message; `fit --missing em`, `score`,
//! `sample` and `impute` say they run in one process.
//!
//! Runs Open MPI's `mpirun` on this machine: most tests with every rank on it (shared memory
//! and loopback), one over two hosts from a hostfile, the hosts being network namespaces with
//! their own names and addresses on a bridge (TCP only between them; root and iproute2). One
//! starts a Slurm cluster of its own on this machine and runs `srun` (root, slurm-wlm, munge).
//! As root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, set
//! here.
#![cfg(feature = "mpi")]

use crate::common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// `mpirun -n RANKS principal ARGS…` in the test's directory.
fn mpirun(env: &Env, ranks: usize, args: &[&str]) -> Output {
    mpirun_through(env, ranks, &[], args)
}

/// `mpirun -n RANKS WRAPPER… principal ARGS…`: each rank runs `principal` through `wrapper`
/// (a command that ends by running its arguments), or directly when it is empty.
fn mpirun_through(env: &Env, ranks: usize, wrapper: &[&str], args: &[&str]) -> Output {
    open_mpi(env)
        .args(["-n", &ranks.to_string(), "--oversubscribe"])
        // This machine only: shared memory between the ranks, loopback for the launcher.
        .args([
            "--mca",
            "btl",
            "self,vader,tcp",
            "--mca",
            "btl_tcp_if_include",
            "lo",
        ])
        .args(["--mca", "oob_tcp_if_include", "lo"])
        .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
        .args(wrapper)
        .arg(env!("CARGO_BIN_EXE_principal"))
        .args(args)
        .output()
        .expect("mpirun runs (apt-get install openmpi-bin)")
}

/// Open MPI's `mpirun` in the test's directory, allowed to run as root, with no wait before
/// killing the ranks of a failed job; the caller adds the ranks, where they run, and the
/// command.
fn open_mpi(env: &Env) -> std::process::Command {
    let mut command = std::process::Command::new("mpirun");
    command
        .current_dir(env.dir.path())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // When a rank exits non-zero, mpirun aborts the job: it signals the ranks it has not yet
        // reaped and waits this long (1 s by default) before killing them, even when they are
        // already ending. Without it a failed job's end measures mpirun's wait, not the ranks.
        .args(["--mca", "odls_base_sigkill_timeout", "0"]);
    command
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mpi_ok(env: &Env, ranks: usize, args: &[&str]) -> String {
    let out = mpirun(env, ranks, args);
    let text = stderr(&out);
    assert!(
        out.status.success(),
        "mpirun {args:?}: {:?}\n{text}",
        out.status
    );
    text
}

/// Runs `mpirun -n RANKS principal ARGS…`, which must fail as [`assert_failed`] says.
fn mpi_fails(
    env: &Env,
    ranks: usize,
    args: &[&str],
    code: i32,
    message: &str,
    unwritten: &[&str],
) -> String {
    assert_failed(env, &mpirun(env, ranks, args), code, message, unwritten)
}

/// Checks that a job failed with exit code `code`, printing one `error:` line (besides srun's
/// own `srun: error: …`) that contains `message`, and left none of `unwritten` behind; returns
/// its stderr.
fn assert_failed(env: &Env, out: &Output, code: i32, message: &str, unwritten: &[&str]) -> String {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{text}");
    let ours = text.matches("error:").count() - text.matches("srun: error:").count();
    assert_eq!(ours, 1, "{text}");
    assert!(text.contains(message), "{text}");
    for name in unwritten {
        assert!(!env.path(name).exists(), "{name} was written");
    }
    text
}

/// Writes `rows` as CSV shards `PREFIX0.csv`, `PREFIX1.csv`… cut at `cuts` (from 0 to the
/// number of rows), with a header `f0,f1,…`; returns their names.
fn write_shards(env: &Env, prefix: &str, rows: &[Vec<f64>], cuts: &[usize]) -> Vec<String> {
    let header: Vec<String> = (0..rows[0].len()).map(|j| format!("f{j}")).collect();
    cuts.windows(2)
        .enumerate()
        .map(|(k, w)| {
            let name = format!("{prefix}{k}.csv");
            env.write(&name, to_csv(Some(&header), &rows[w[0]..w[1]]));
            name
        })
        .collect()
}

/// Puts a bad value (`?`) at the start of the last line of the test's file `name`.
fn spoil_last_line(env: &Env, name: &str) {
    let mut text = std::fs::read_to_string(env.path(name)).unwrap();
    let at = text.trim_end().rfind('\n').unwrap() + 1;
    text.replace_range(at..at + 1, "?");
    env.write(name, text);
}

/// Fits `fit` (a `fit` command without its output) in one process and through `launch` over
/// three ranks; checks that the job succeeded, that only rank 0 printed its summary and that
/// it fitted over 3 processes; returns the models (the job's, one process's).
fn fit_both_ways(
    env: &Env,
    fit: &[&str],
    launch: impl FnOnce(&[&str]) -> Output,
) -> (serde_json::Value, serde_json::Value) {
    let mut one = fit.to_vec();
    one.extend(["-o", "one.pca"]);
    env.ok(&one);
    let mut many = fit.to_vec();
    many.extend(["-o", "many.pca"]);
    let out = launch(&many);
    let said = stderr(&out);
    assert!(out.status.success(), "{many:?}: {:?}\n{said}", out.status);
    assert_eq!(said.matches("fitted ").count(), 1, "{said}");
    assert!(said.contains("over 3 MPI processes"), "{said}");
    (model_json(env, "many.pca"), model_json(env, "one.pca"))
}

/// Checks that `codes.part-R-of-3.csv`, R = 0, 1, 2, each with rows and the header of the
/// test's file `whole`, concatenate to `whole` (to 1e-12).
fn assert_parts_join_to(env: &Env, whole: &str) {
    let (names, whole) = env.read_csv(whole);
    let mut joined = Vec::new();
    for rank in 0..3 {
        let (part_names, rows) = env.read_csv(&format!("codes.part-{rank}-of-3.csv"));
        assert_eq!(part_names, names);
        assert!(!rows.is_empty(), "rank {rank} has rows");
        joined.extend(rows);
    }
    assert_eq!(joined.len(), whole.len());
    for (a, b) in joined.iter().zip(&whole) {
        assert_close(a, b, 1e-12, "codes");
    }
}

/// The fit of the failing-rank tests: a.csv, b.csv and c.csv in chunks of 1,024 rows (a rank
/// looks for another's failure between chunks).
const LARGE_FIT: [&str; 10] = [
    "fit",
    "a.csv",
    "b.csv",
    "c.csv",
    "--solver",
    "covariance",
    "--memory-limit",
    "16M",
    "-o",
    "m.pca",
];

/// Writes a.csv for [`LARGE_FIT`] — 24,000×100, about 44 MB (the tests share a machine's disk
/// with the build), read in chunks for about a second — and links each of `links` to it, so
/// that they take no space; returns its text.
fn write_large_csv(env: &Env, seed: u64, links: &[&str]) -> String {
    let header: Vec<String> = (0..100).map(|j| format!("f{j}")).collect();
    let text = to_csv(Some(&header), &offset_rows(24_000, 100, seed));
    env.write("a.csv", &text);
    for name in links {
        std::fs::hard_link(env.path("a.csv"), env.path(name)).expect("link to a.csv");
    }
    text
}

fn model_json(env: &Env, model: &str) -> serde_json::Value {
    let mut json = env.inspect(model);
    json.as_object_mut().unwrap().remove("iteration_report");
    json
}

/// Tall data near 1e6 with a few strong directions.
fn offset_rows(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|_| {
            let (a, b) = (rng.next() - 0.5, rng.next() - 0.5);
            (0..d)
                .map(|j| 1e6 + 10.0 * a * (j as f64 + 1.0) + 3.0 * b * (d - j) as f64 + rng.next())
                .collect()
        })
        .collect()
}

#[test]
fn three_ranks_fit_the_model_of_one_process() {
    let env = Env::new();
    let rows = offset_rows(3000, 8, 1);
    env.write("one.npy", npy(&rows, false));
    // The same rows as five CSV shards of unequal length, and as one CSV file.
    let shards = write_shards(&env, "shard-", &rows, &[0, 100, 1100, 1200, 2900, 3000]);
    write_shards(&env, "all-", &rows, &[0, 3000]);
    // em on the two strong directions: the third is noise among noise, where em converges
    // slowly (to about 1e-4 in 1,000 passes), so one and three processes stop at different
    // approximations of it.
    let cases: [(&[&str], f64); 5] = [
        (&["--solver", "covariance", "-k", "3"], 1e-9),
        (
            &["--solver", "covariance", "-k", "3", "--standardize"],
            1e-9,
        ),
        (&["--solver", "randomized", "-k", "3", "--seed", "3"], 1e-9),
        (&["--solver", "em", "-k", "2"], 1e-9),
        (&["--solver", "auto", "-k", "3"], 1e-9),
    ];
    for (options, tolerance) in cases {
        for inputs in [
            vec!["one.npy".to_string()],
            shards.clone(),
            vec!["all-0.csv".into()],
        ] {
            let mut args: Vec<&str> = vec!["fit"];
            args.extend(inputs.iter().map(String::as_str));
            args.extend(options);
            let (a, b) = fit_both_ways(&env, &args, |job| mpirun(&env, 3, job));
            if options[1] == "auto" {
                // One process may take svd; over three, covariance.
                assert_eq!(a["solver"], "covariance");
                assert_close(
                    &numbers(&a["explained_variance"]),
                    &numbers(&b["explained_variance"]),
                    tolerance * numbers(&b["explained_variance"])[0],
                    "auto",
                );
            } else {
                assert_same_model(&a, &b, tolerance);
            }
        }
    }
}

/// mle and gavish-donoho choose from the spectrum of the moments the ranks reduce: over three
/// processes the choice (2, the data's two strong directions) and the model equal one
/// process's, the data near 1e6 in three uneven shards. cv refits held-out rows, which no rank
/// holds all of: refused before anything is read, with a message that says why and what to
/// use instead.
#[test]
fn mle_and_gavish_donoho_choose_from_the_reduced_moments_and_cv_is_refused() {
    let env = Env::new();
    let rows = offset_rows(3000, 8, 5);
    let shards = write_shards(&env, "shard-", &rows, &[0, 100, 1100, 3000]);
    // offset_rows' noise is uniform on [0, 1): σ = 1/√12.
    let criteria: [&[&str]; 3] = [
        &["--components", "mle"],
        &["--components", "gavish-donoho"],
        &["-k", "gavish-donoho", "--noise-sigma", "0.288675"],
    ];
    for criterion in criteria {
        for solver in ["covariance", "auto"] {
            let mut args: Vec<&str> = vec!["fit"];
            args.extend(shards.iter().map(String::as_str));
            args.extend(criterion);
            args.extend(["--solver", solver]);
            let (many, one) = fit_both_ways(&env, &args, |job| mpirun(&env, 3, job));
            assert_eq!(many["n_components"], 2, "{criterion:?}: {many}");
            assert_eq!(many["solver"], "covariance");
            if solver == "covariance" {
                assert_same_model(&many, &one, 1e-9);
            } else {
                // One process may take svd; over three, covariance: the same choice.
                assert_eq!(many["n_components"], one["n_components"]);
                let lambda = numbers(&one["explained_variance"]);
                assert_close(
                    &numbers(&many["explained_variance"]),
                    &lambda,
                    1e-9 * lambda[0],
                    "auto",
                );
            }
        }
    }
    let mut cv: Vec<&str> = vec!["fit"];
    cv.extend(shards.iter().map(String::as_str));
    cv.extend(["--components", "cv", "-o", "cv.pca"]);
    mpi_fails(
        &env,
        3,
        &cv,
        1,
        "cv cannot choose the number of components: cross-validation refits held-out rows, \
         and across processes each holds only its part of them; run it in one process, or \
         choose with mle or gavish-donoho",
        &["cv.pca"],
    );
}

#[test]
fn gram_and_svd_say_they_need_one_process() {
    let env = Env::new();
    for solver in ["gram", "svd"] {
        mpi_fails(
            &env,
            3,
            &[
                "fit",
                &iris(),
                "--exclude",
                "species",
                "--solver",
                solver,
                "-o",
                "m.pca",
            ],
            1,
            &format!("solver {solver} cannot be used here: it needs the whole data in one process"),
            &["m.pca"],
        );
    }
}

/// Missing values are fitted in one process: `fit --missing em` under mpirun says so, and
/// `score`, `sample` and `impute` run in one process only; nothing is written.
#[test]
fn missing_values_and_probabilistic_commands_need_one_process() {
    let env = Env::new();
    env.write("holes.csv", "a,b,c\n1,,3\n2,1,1\n4,0,\n3,2,2\n0,1,2\n");
    let fit = [
        "fit",
        "holes.csv",
        "-k",
        "1",
        "--missing",
        "em",
        "-o",
        "m.pca",
    ];
    mpi_fails(
        &env,
        2,
        &fit,
        1,
        "missing values are fitted in one process for now",
        &["m.pca"],
    );
    env.ok(&fit);
    for args in [
        &[
            "score",
            "m.pca",
            "holes.csv",
            "--missing",
            "em",
            "-o",
            "out.csv",
        ][..],
        &["sample", "m.pca", "--count", "5", "-o", "out.csv"],
        &["impute", "m.pca", "holes.csv", "-o", "out.csv"],
    ] {
        mpi_fails(
            &env,
            2,
            args,
            1,
            &format!("`principal {}` runs in one process", args[0]),
            &["out.csv"],
        );
    }
}

#[test]
fn transform_writes_one_part_per_rank_that_concatenate_to_the_whole() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-k",
        "2",
        "-o",
        "iris.pca",
    ]);
    env.ok(&["transform", "iris.pca", &iris(), "-o", "codes.csv"]);
    let said = mpi_ok(
        &env,
        3,
        &["transform", "iris.pca", &iris(), "-o", "codes.csv"],
    );
    assert!(said.contains("3 parts"), "{said}");
    let (names, whole) = env.read_csv("codes.csv");
    assert_eq!(names.unwrap(), ["pc1", "pc2"]);
    assert_eq!(whole.len(), 150);
    assert_parts_join_to(&env, "codes.csv");
}

#[test]
fn a_failing_rank_ends_the_job_with_its_message() {
    let env = Env::new();
    // Three files of equal size, one per rank; rank 1's will have a bad value on its third
    // line. c.csv is a hard link to a.csv, so only two files take space.
    let text = write_large_csv(&env, 2, &["c.csv"]);
    env.write("b.csv", &text);
    let args = LARGE_FIT;
    // What starting a job costs, from a fit of 3 rows.
    env.write("tiny.csv", "x,y\n1,2\n3,5\n4,4\n");
    let started = Instant::now();
    mpi_ok(&env, 3, &["fit", "tiny.csv", "-o", "tiny.pca"]);
    let start_up = started.elapsed();
    let started = Instant::now();
    mpi_ok(&env, 3, &args);
    let healthy = started.elapsed();
    std::fs::remove_file(env.path("m.pca")).unwrap();
    let first_line_end = text.find('\n').unwrap() + 1;
    let second_line_end = first_line_end + text[first_line_end..].find('\n').unwrap() + 1;
    let mut bad = text.clone();
    bad.replace_range(second_line_end..second_line_end + 1, "x");
    assert_eq!(bad.len(), text.len());
    env.write("b.csv", &bad);
    let started = Instant::now();
    mpi_fails(
        &env,
        3,
        &args,
        1,
        "error: cannot fit a.csv and 2 more file(s): rank 1: b.csv, line 3, column 1 (\"f0\"):",
        &["m.pca"],
    );
    let failed = started.elapsed();
    // Never a hang: the job ends, whatever the others were doing. How promptly is printed, not
    // asserted, for a machine's load decides it: here, with mpirun's kill wait off (above), the
    // failing job ended within a healthy run's time in every run.
    assert!(
        failed < healthy * 3 + Duration::from_secs(30),
        "failed after {failed:?}, a healthy run took {healthy:?}, a tiny one {start_up:?}"
    );
    eprintln!("start-up {start_up:?}, healthy run {healthy:?}, failing run {failed:?}");
}

/// A rank that dies — killed with SIGKILL, as the out-of-memory killer does, once it has
/// joined the job and is reading its part — cannot say why: the launcher ends the job, which
/// fails, with no model and no temporary file left behind, and never hangs.
#[test]
fn a_killed_rank_ends_the_job_without_a_model() {
    let env = Env::new();
    write_large_csv(&env, 3, &["b.csv", "c.csv"]);
    // Rank 1 is killed as soon as it has a CSV file open, which is after MPI is initialized
    // (the files are opened by the command, after the processes have started).
    let wrapper = [
        "sh",
        "-c",
        "if [ \"$OMPI_COMM_WORLD_RANK\" != 1 ]; then exec \"$@\"; fi\n\
         \"$@\" & pid=$!\n\
         while kill -0 $pid 2>/dev/null && ! ls -l /proc/$pid/fd 2>/dev/null | grep -q '[.]csv'\n\
         do sleep 0.01; done\n\
         kill -KILL $pid; wait $pid",
        "sh",
    ];
    let started = Instant::now();
    let out = mpirun_through(&env, 3, &wrapper, &LARGE_FIT);
    let took = started.elapsed();
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    // The shell reports its child's death by SIGKILL as exit code 137; rank 1's.
    assert!(said.contains("Exit code:    137"), "{said}");
    assert!(said.contains(",1]"), "{said}");
    let left: Vec<String> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".csv"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // Never a hang: a bound far above the job's time (about a second here).
    assert!(took < Duration::from_secs(60), "took {took:?}");
    eprintln!("a job with a killed rank ended after {took:?}");
}

#[test]
fn a_failing_rank_leaves_no_transform_part_behind() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-k",
        "2",
        "-o",
        "iris.pca",
    ]);
    // Three shards of 50 rows, one per rank; the middle one has a bad value on its last line.
    let (names, rows) = iris_rows();
    for (k, name) in ["a.csv", "b.csv", "c.csv"].iter().enumerate() {
        env.write(name, to_csv(Some(&names), &rows[50 * k..50 * (k + 1)]));
    }
    spoil_last_line(&env, "b.csv");
    let args = [
        "transform",
        "iris.pca",
        "a.csv",
        "b.csv",
        "c.csv",
        "-o",
        "codes.csv",
    ];
    let parts: Vec<String> = (0..3)
        .map(|rank| format!("codes.part-{rank}-of-3.csv"))
        .collect();
    let mut unwritten: Vec<&str> = parts.iter().map(String::as_str).collect();
    unwritten.push("codes.csv");
    mpi_fails(
        &env,
        3,
        &args,
        1,
        "rank 1: cannot transform a.csv and 2 more file(s): b.csv, line 51",
        &unwritten,
    );
}

/// Hosts on this machine for a job launched as on a cluster: network namespaces (each its own
/// network stack and address, as `ph{k}`-like hosts would have) joined by a bridge, and Open
/// MPI's rsh launcher with an agent that enters a namespace where a cluster's would `ssh`.
/// Needs root and iproute2; removed on drop.
struct Hosts {
    names: Vec<String>,
    bridge: String,
    /// The hosts' subnet, as `198.A.B.0/24`.
    subnet: String,
}

fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .expect("ip runs (apt-get install iproute2)");
    assert!(
        out.status.success(),
        "ip {args:?} failed (network namespaces need root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Hosts {
    fn new(count: usize) -> Hosts {
        // Names of this test process's own, so that concurrent runs do not meet, and a subnet
        // of 198.18.0.0/15 (set aside for network tests, RFC 2544) that no interface here uses.
        let id = std::process::id() % 60_000;
        let in_use = std::process::Command::new("ip")
            .args(["-4", "-o", "addr", "show"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .expect("ip runs (apt-get install iproute2)");
        let (a, b) = (0..512)
            .map(|k| (18 + (id + k) / 256 % 2, (id + k) % 256))
            .find(|(a, b)| !in_use.contains(&format!(" 198.{a}.{b}.")))
            .expect("a free subnet in 198.18.0.0/15");
        let bridge = format!("pbr{id}");
        let subnet = format!("198.{a}.{b}.0/24");
        let mut hosts = Hosts {
            names: Vec::new(),
            bridge: bridge.clone(),
            subnet,
        };
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&[
            "addr",
            "add",
            &format!("198.{a}.{b}.254/24"),
            "dev",
            &bridge,
        ]);
        ip(&["link", "set", &bridge, "up"]);
        for k in 1..=count {
            let name = format!("ph{id}-{k}");
            let veth = format!("pv{id}-{k}");
            ip(&["netns", "add", &name]);
            hosts.names.push(name.clone());
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &name,
            ]);
            ip(&["link", "set", &veth, "master", &bridge, "up"]);
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &name, "ip"];
                all.extend(args);
                ip(&all);
            };
            inside(&["addr", "add", &format!("198.{a}.{b}.{k}/24"), "dev", "eth0"]);
            inside(&["link", "set", "eth0", "up"]);
            inside(&["link", "set", "lo", "up"]);
        }
        hosts
    }

    /// `mpirun -n RANKS --hostfile …` with `slots` ranks per host, in the test's directory:
    /// the ranks talk over TCP on the hosts' network only (no shared memory between hosts).
    fn mpirun(&self, env: &Env, ranks: usize, slots: &[usize], args: &[&str]) -> Output {
        let hostfile: String = self
            .names
            .iter()
            .zip(slots)
            .map(|(name, slots)| format!("{name} slots={slots}\n"))
            .collect();
        env.write("hostfile", hostfile);
        // Each host has its own name (a UTS namespace) and its own temporary directory
        // (/tmp/HOST: short, for the sockets Open MPI makes there), where Open MPI keeps a
        // host's session files: two daemons under one name on one machine collide there
        // (seen: an orted crashing in hwloc's shared topology file, a session mkdir failing).
        let agent = env.write(
            "agent.sh",
            "#!/bin/sh\n# Open MPI's rsh agent: HOST COMMAND… runs COMMAND on HOST, a namespace.\n\
             host=$1; shift\nmkdir -p \"/tmp/$host\"\n\
             exec ip netns exec \"$host\" unshare --uts /bin/sh -c \\\n\
             \"hostname $host && TMPDIR=/tmp/$host && export TMPDIR && $*\"\n",
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        open_mpi(env)
            .args(["-n", &ranks.to_string(), "--hostfile", "hostfile"])
            .args(["--mca", "plm_rsh_agent", agent.to_str().unwrap()])
            .args(["--mca", "btl", "self,tcp"])
            .args(["--mca", "btl_tcp_if_include", &self.subnet])
            .args(["--mca", "oob_tcp_if_include", &self.subnet])
            .arg(env!("CARGO_BIN_EXE_principal"))
            .args(args)
            .output()
            .expect("mpirun runs (apt-get install openmpi-bin)")
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace removes its end of the veth pair, and with it the other end.
        for name in &self.names {
            let _ = std::process::Command::new("ip")
                .args(["netns", "delete", name])
                .status();
            let _ = std::fs::remove_dir_all(format!("/tmp/{name}"));
        }
        let _ = std::process::Command::new("ip")
            .args(["link", "delete", &self.bridge])
            .status();
    }
}

/// A job over two hosts from a hostfile (rank 0 on one, ranks 1 and 2 on the other), launched
/// through the rsh agent and talking TCP: the model of one process, to rounding, for the
/// covariance and randomized solvers, standardized or not, under an offset of 1e6; a failing
/// rank on the other host ends the job with its message and no model.
#[test]
fn a_job_over_two_hosts_fits_the_model_of_one_process() {
    let env = Env::new();
    let hosts = Hosts::new(2);
    write_shards(&env, "p", &offset_rows(2000, 6, 4), &[0, 500, 1400, 2000]);
    for options in [
        &["--solver", "covariance", "-k", "3"][..],
        &["--solver", "covariance", "-k", "3", "--standardize"],
        &["--solver", "randomized", "-k", "2", "--seed", "5"],
    ] {
        let mut args = vec!["fit", "p0.csv", "p1.csv", "p2.csv"];
        args.extend(options);
        let (a, b) = fit_both_ways(&env, &args, |job| hosts.mpirun(&env, 3, &[1, 2], job));
        assert_same_model(&a, &b, 1e-9);
    }
    // Rank 2, on the second host, reads p2.csv: a bad value on its last line.
    spoil_last_line(&env, "p2.csv");
    let args = [
        "fit",
        "p0.csv",
        "p1.csv",
        "p2.csv",
        "-k",
        "2",
        "-o",
        "hosts.pca",
    ];
    assert_failed(
        &env,
        &hosts.mpirun(&env, 3, &[1, 2], &args),
        1,
        "cannot fit p0.csv and 2 more file(s): rank 2: p2.csv, line 601",
        &["hosts.pca"],
    );
}

/// A Slurm cluster of this one machine, of the test's own: munged, slurmctld and slurmd
/// started in the foreground with a configuration, key, sockets, ports and state in a
/// temporary directory, so that nothing of the system's is used or changed. Needs root and
/// Debian's slurm-wlm and munge; stopped on drop.
struct Slurm {
    dir: tempfile::TempDir,
    daemons: Vec<std::process::Child>,
}

impl Slurm {
    fn start() -> Slurm {
        let dir = tempfile::tempdir().expect("temporary directory");
        let d = dir.path().to_str().unwrap().to_string();
        let mut slurm = Slurm {
            dir,
            daemons: Vec::new(),
        };
        let key: Vec<u8> = (0..1024u32).map(|i| (i * 7919 % 251) as u8).collect();
        let key_file = format!("{d}/munge.key");
        std::fs::write(&key_file, key).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        for sub in ["ctld", "spool"] {
            std::fs::create_dir(format!("{d}/{sub}")).unwrap();
        }
        slurm.spawn(
            "munged",
            &[
                "-F",
                "--force",
                &format!("--socket={d}/munge.sock"),
                &format!("--key-file={key_file}"),
                &format!("--pid-file={d}/munged.pid"),
                &format!("--log-file={d}/munged.log"),
                &format!("--seed-file={d}/munged.seed"),
            ],
        );
        // This machine as the one node, as slurmd sees it (CPUs, memory).
        let node = std::process::Command::new("slurmd")
            .arg("-C")
            .output()
            .expect("slurmd runs (apt-get install slurm-wlm munge)");
        let node = String::from_utf8_lossy(&node.stdout);
        let node = node
            .lines()
            .next()
            .expect("slurmd -C prints the node")
            .trim();
        let host = node
            .strip_prefix("NodeName=")
            .and_then(|rest| rest.split_whitespace().next())
            .expect("NodeName=HOST first")
            .to_string();
        // Two distinct ports the system says are free now: both bound to port 0 at once, then
        // let go for the daemons.
        let listeners: Vec<std::net::TcpListener> = (0..2)
            .map(|_| std::net::TcpListener::bind("0.0.0.0:0").expect("a free port"))
            .collect();
        let port = |k: usize| listeners[k].local_addr().unwrap().port();
        let (ctld_port, slurmd_port) = (port(0), port(1));
        drop(listeners);
        let conf = format!(
            "ClusterName=principaltest\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
             AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nCredType=cred/munge\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
             SlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={d}/ctld\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ReturnToService=2\nMpiDefault=none\n\
             {node} NodeAddr=127.0.0.1 State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP \
             OverSubscribe=FORCE\n"
        );
        let conf_file = format!("{d}/slurm.conf");
        std::fs::write(&conf_file, conf).unwrap();
        slurm.spawn("slurmctld", &["-D", "-f", &conf_file]);
        slurm.spawn("slurmd", &["-D", "-f", &conf_file]);
        // Ready when the node is idle.
        let started = Instant::now();
        loop {
            let out = slurm.command("sinfo").args(["-h", "-o", "%T"]).output();
            if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("idle")) {
                break slurm;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the test's Slurm did not start; its logs are in {d}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn spawn(&mut self, program: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir.path().join(format!("{program}.out"))).unwrap();
        let child = std::process::Command::new(program)
            .args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{program} runs (apt-get install slurm-wlm munge): {e}"));
        self.daemons.push(child);
    }

    /// A Slurm client command (srun, sbatch, sinfo) of this cluster.
    fn command(&self, program: &str) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        command.env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        command
    }

    /// `srun -n TASKS --overcommit [--mpi=pmix] principal ARGS…` in the test's directory.
    fn srun(&self, env: &Env, tasks: usize, pmix: bool, args: &[&str]) -> Output {
        let mut command = self.command("srun");
        command
            .current_dir(env.dir.path())
            .args(["-n", &tasks.to_string(), "--overcommit"])
            .args(pmix.then_some("--mpi=pmix"))
            // This machine only: shared memory between the ranks, loopback for the rest.
            .env("OMPI_MCA_btl", "self,vader,tcp")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .arg(env!("CARGO_BIN_EXE_principal"))
            .args(args);
        command.output().expect("srun runs")
    }
}

impl Drop for Slurm {
    /// Stops slurmd, slurmctld and munged in that order, each asked first (SIGTERM: slurmctld
    /// then ends its helper, slurmscriptd), killed after 10 s.
    fn drop(&mut self) {
        for daemon in self.daemons.iter_mut().rev() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &daemon.id().to_string()])
                .status();
            let asked = Instant::now();
            while daemon.try_wait().is_ok_and(|done| done.is_none())
                && asked.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// Slurm's srun starts the ranks itself (no mpirun; PMIx): the model of one process to 1e-9,
/// one transform part per rank, a failing rank's message; srun without an MPI plugin, whose
/// tasks could not work together, is refused; a batch script in an allocation of 3 tasks that
/// runs principal once is one process, not refused.
#[test]
fn srun_starts_the_ranks_itself() {
    let slurm = Slurm::start();
    let env = Env::new();
    write_shards(&env, "p", &offset_rows(2000, 6, 7), &[0, 700, 1300, 2000]);
    for options in [
        &["--solver", "covariance", "-k", "3"][..],
        &["--solver", "randomized", "-k", "2", "--seed", "2"],
    ] {
        let mut args = vec!["fit", "p0.csv", "p1.csv", "p2.csv"];
        args.extend(options);
        let (a, b) = fit_both_ways(&env, &args, |job| slurm.srun(&env, 3, true, job));
        assert_same_model(&a, &b, 1e-9);
    }
    let transform = [
        "transform",
        "one.pca",
        "p0.csv",
        "p1.csv",
        "p2.csv",
        "-o",
        "codes.csv",
    ];
    let out = slurm.srun(&env, 3, true, &transform);
    assert!(out.status.success(), "{}", stderr(&out));
    env.ok(&[
        "transform",
        "one.pca",
        "p0.csv",
        "p1.csv",
        "p2.csv",
        "-o",
        "whole.csv",
    ]);
    assert_parts_join_to(&env, "whole.csv");
    // Without --mpi every task would fit the whole data alone: refused, nothing written.
    assert_failed(
        &env,
        &slurm.srun(&env, 3, false, &["fit", "p0.csv", "-o", "alone.pca"]),
        1,
        "srun started this as rank 0 of 3 with no MPI plugin",
        &["alone.pca"],
    );
    // A batch script runs principal once: one process, whatever the allocation.
    let script = format!(
        "#!/bin/sh\n{} fit p0.csv p1.csv -k 2 -o batch.pca\n",
        env!("CARGO_BIN_EXE_principal")
    );
    env.write("job.sh", script);
    let out = slurm
        .command("sbatch")
        .current_dir(env.dir.path())
        .args(["-W", "-n", "3", "--overcommit", "-o", "job.out", "job.sh"])
        .output()
        .expect("sbatch runs");
    let said = std::fs::read_to_string(env.path("job.out")).unwrap_or_default();
    assert!(out.status.success(), "{}\n{said}", stderr(&out));
    assert!(
        said.contains("fitted 2 component(s) to 1300 samples"),
        "{said}"
    );
    // A failing rank ends the job with its message, and no model.
    spoil_last_line(&env, "p1.csv");
    let args = [
        "fit", "p0.csv", "p1.csv", "p2.csv", "-k", "2", "-o", "bad.pca",
    ];
    assert_failed(
        &env,
        &slurm.srun(&env, 3, true, &args),
        1,
        ": p1.csv, line 601",
        &["bad.pca"],
    );
}

/// A fixture of the sparse tests (fixtures/sparse, fixtures/h5ad), by its absolute path.
fn sparse_fixture(path: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
        .display()
        .to_string()
}

/// Sparse inputs under `mpirun -n 3`: each rank reads its own range of the rows — a
/// MatrixMarket file whose entries are shuffled (each rank scans it and holds its rows), one
/// sorted by row and larger than the memory limit allows to hold (each rank streams its
/// rows), a 10x directory (cells are the file's columns), and .h5ad CSR (read from its part of
/// indptr) and CSC (read from the first row, the part's rows kept) — and the ranks fit them
/// together: the model of one process, on the covariance route and the randomized solver,
/// centred, standardized and uncentred.
#[test]
fn sparse_inputs_over_three_ranks_fit_the_model_of_one_process() {
    let env = Env::new();
    // 9,000 × 50, about 40% non-zero, sorted by row: ≈ 2.2 MB as CSR, a third of it per rank,
    // over half of --memory-limit 1M, so every rank streams its rows from the text.
    let (n, d) = (9000, 50);
    let mut rng = Lcg(31);
    let mut entries = Vec::new();
    for i in 0..n {
        for j in 0..d {
            if rng.next() < 0.4 {
                let x = (1.0 + 9.0 * rng.next()).floor() * (1.0 + (j % 5) as f64);
                entries.push(format!("{} {} {x}", i + 1, j + 1));
            }
        }
    }
    let mut text = format!(
        "%%MatrixMarket matrix coordinate real general\n{n} {d} {}\n",
        entries.len()
    );
    text.push_str(&entries.join("\n"));
    env.write("big.mtx", text);
    let out = mpirun(
        &env,
        3,
        &[
            "fit",
            "big.mtx",
            "-o",
            "s.pca",
            "--memory-limit",
            "1M",
            "--explain",
        ],
    );
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("each of 3 MPI processes reads its range of the rows")
            && said.contains("every pass reads the text a block of rows at a time"),
        "{said}"
    );
    let inputs: Vec<String> = [
        sparse_fixture("sparse/counts.mtx"),
        sparse_fixture("sparse/tenx"),
        sparse_fixture("h5ad/x_csr_f64.h5ad"),
        sparse_fixture("h5ad/x_csc_f64.h5ad"),
        "big.mtx".to_string(),
    ]
    .into_iter()
    .filter(|input| cfg!(feature = "h5ad") || !input.ends_with(".h5ad"))
    .collect();
    let cases: [&[&str]; 4] = [
        &["--solver", "covariance", "-k", "3"],
        &["--solver", "covariance", "-k", "3", "--standardize"],
        &["--solver", "randomized", "-k", "3", "--tolerance", "1e-13"],
        &[
            "--solver",
            "randomized",
            "-k",
            "3",
            "--no-centre",
            "--tolerance",
            "1e-13",
        ],
    ];
    for input in &inputs {
        for options in cases {
            let mut args: Vec<&str> = vec!["fit", input];
            args.extend(options);
            if input == "big.mtx" {
                args.extend(["--memory-limit", "1M"]);
            }
            let (many, one) = fit_both_ways(&env, &args, |job| mpirun(&env, 3, job));
            assert_same_model(&many, &one, 1e-10);
        }
    }
}

/// `transform` of sparse inputs under `mpirun -n 3`: each rank projects its range of the rows
/// (sparse blocks, never densified) into its own part, and the parts concatenate to one
/// process's codes.
#[test]
fn transform_of_sparse_inputs_writes_parts_that_concatenate_to_the_whole() {
    let env = Env::new();
    for input in [
        sparse_fixture("sparse/counts.mtx"),
        sparse_fixture("sparse/tenx"),
        sparse_fixture("h5ad/x_csr_f64.h5ad"),
        sparse_fixture("h5ad/x_csc_f64.h5ad"),
    ]
    .into_iter()
    .filter(|input| cfg!(feature = "h5ad") || !input.ends_with(".h5ad"))
    {
        if input.ends_with(".h5ad") {
            // The h5ad fixtures hold other counts (40 × 15): their own model.
            env.ok(&["fit", &input, "-k", "3", "-o", "m.pca"]);
        } else {
            env.ok(&[
                "fit",
                &sparse_fixture("sparse/counts.mtx"),
                "-k",
                "3",
                "-o",
                "m.pca",
            ]);
        }
        env.ok(&["transform", "m.pca", &input, "-o", "whole.csv"]);
        mpi_ok(&env, 3, &["transform", "m.pca", &input, "-o", "codes.csv"]);
        assert_parts_join_to(&env, "whole.csv");
    }
}
