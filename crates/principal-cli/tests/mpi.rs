//! `principal` under `mpirun -n 3` (feature `mpi`): each rank reads its part of the inputs and
//! the model equals one process's to rounding, for covariance, randomized and em, standardized
//! or not, under an offset of 1e6; only rank 0 writes and prints; `transform` writes one part
//! per rank; a failing rank ends the job promptly with its message; `fit --missing em`, `score`,
//! `sample` and `impute` say they run in one process.
//!
//! Runs Open MPI's `mpirun` on this machine: most tests with every rank on it (shared memory
//! and loopback), one over two hosts from a hostfile, the hosts being network namespaces with
//! their own names and addresses on a bridge (TCP only between them; root and iproute2). As
//! root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, set here.
#![cfg(feature = "mpi")]

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// `mpirun -n RANKS principal ARGS…` in the test's directory.
fn mpirun(env: &Env, ranks: usize, args: &[&str]) -> Output {
    let ranks = ranks.to_string();
    let mut command = std::process::Command::new("mpirun");
    command
        .current_dir(env.dir.path())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["-n", &ranks, "--oversubscribe"])
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
        // When a rank exits non-zero, mpirun aborts the job: it signals the ranks it has not yet
        // reaped and waits this long (1 s by default) before killing them, even when they are
        // already ending. Without it a failed job's end measures mpirun's wait, not the ranks.
        .args(["--mca", "odls_base_sigkill_timeout", "0"])
        .arg(env!("CARGO_BIN_EXE_principal"))
        .args(args);
    command
        .output()
        .expect("mpirun runs (apt-get install openmpi-bin)")
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

/// Runs a job that must fail with exit code `code`, printing one `error:` line that contains
/// `message`, and leaving none of `unwritten` behind; returns its stderr.
fn mpi_fails(
    env: &Env,
    ranks: usize,
    args: &[&str],
    code: i32,
    message: &str,
    unwritten: &[&str],
) -> String {
    let out = mpirun(env, ranks, args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "mpirun {args:?}:\n{text}");
    assert_eq!(text.matches("error:").count(), 1, "{text}");
    assert!(text.contains(message), "mpirun {args:?}:\n{text}");
    for name in unwritten {
        assert!(!env.path(name).exists(), "{name} was written");
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
    let header: Vec<String> = (0..8).map(|j| format!("f{j}")).collect();
    let mut shards = Vec::new();
    for (k, w) in [0, 100, 1100, 1200, 2900, 3000].windows(2).enumerate() {
        let name = format!("shard-{k}.csv");
        env.write(&name, to_csv(Some(&header), &rows[w[0]..w[1]]));
        shards.push(name);
    }
    env.write("all.csv", to_csv(Some(&header), &rows));
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
            vec!["all.csv".into()],
        ] {
            let mut args: Vec<&str> = vec!["fit"];
            args.extend(inputs.iter().map(String::as_str));
            args.extend(options);
            let mut one = args.clone();
            one.extend(["-o", "one.pca"]);
            env.ok(&one);
            let mut three = args.clone();
            three.extend(["-o", "three.pca"]);
            let said = mpi_ok(&env, 3, &three);
            // Only rank 0 prints its summary.
            assert_eq!(said.matches("fitted ").count(), 1, "{said}");
            assert!(said.contains("over 3 MPI processes"), "{said}");
            let (a, b) = (model_json(&env, "three.pca"), model_json(&env, "one.pca"));
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
    mpi_fails(
        &env,
        2,
        &[
            "fit",
            "holes.csv",
            "-k",
            "1",
            "--missing",
            "em",
            "-o",
            "m.pca",
        ],
        1,
        "missing values are fitted in one process for now",
        &["m.pca"],
    );
    env.ok(&[
        "fit",
        "holes.csv",
        "-k",
        "1",
        "--missing",
        "em",
        "-o",
        "m.pca",
    ]);
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
    let (_, whole) = env.read_csv("codes.csv");
    let mut joined = Vec::new();
    for rank in 0..3 {
        let (names, rows) = env.read_csv(&format!("codes.part-{rank}-of-3.csv"));
        assert_eq!(names.unwrap(), ["pc1", "pc2"]);
        assert!(!rows.is_empty(), "rank {rank} has rows");
        joined.extend(rows);
    }
    assert_eq!(joined.len(), 150);
    for (a, b) in joined.iter().zip(&whole) {
        assert_close(a, b, 1e-12, "codes");
    }
}

#[test]
fn a_failing_rank_ends_the_job_with_its_message() {
    let env = Env::new();
    // Three files of equal size (about 40 MB: the tests share a machine's disk with the build),
    // one per rank, each parsed in chunks for about a second; rank 1's has a bad value on its
    // third line. c.csv is a hard link to a.csv, so only two files take space.
    let rows = offset_rows(24_000, 100, 2);
    let header: Vec<String> = (0..100).map(|j| format!("f{j}")).collect();
    let text = to_csv(Some(&header), &rows);
    env.write("a.csv", &text);
    std::fs::hard_link(env.path("a.csv"), env.path("c.csv")).expect("link c.csv to a.csv");
    env.write("b.csv", &text);
    // Chunks of 1,024 rows: a rank looks for another's failure between chunks.
    let args = [
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
        let mut text = to_csv(Some(&names), &rows[50 * k..50 * (k + 1)]);
        if k == 1 {
            let at = text.trim_end().rfind('\n').unwrap() + 1;
            text.replace_range(at..at + 1, "?");
        }
        env.write(name, text);
    }
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
    /// The hosts' subnet, as `10.A.B.0/24`.
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
        // Names and a subnet of this test process's own, so that concurrent runs do not meet.
        let id = std::process::id() % 60_000;
        let (a, b) = (16 + id / 250 % 200, id % 250);
        let bridge = format!("pbr{id}");
        let subnet = format!("10.{a}.{b}.0/24");
        let mut hosts = Hosts {
            names: Vec::new(),
            bridge: bridge.clone(),
            subnet,
        };
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["addr", "add", &format!("10.{a}.{b}.254/24"), "dev", &bridge]);
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
            inside(&["addr", "add", &format!("10.{a}.{b}.{k}/24"), "dev", "eth0"]);
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
        std::process::Command::new("mpirun")
            .current_dir(env.dir.path())
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .args(["-n", &ranks.to_string(), "--hostfile", "hostfile"])
            .args(["--mca", "plm_rsh_agent", agent.to_str().unwrap()])
            .args(["--mca", "btl", "self,tcp"])
            .args(["--mca", "btl_tcp_if_include", &self.subnet])
            .args(["--mca", "oob_tcp_if_include", &self.subnet])
            .args(["--mca", "odls_base_sigkill_timeout", "0"])
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
    let rows = offset_rows(2000, 6, 4);
    let header: Vec<String> = (0..6).map(|j| format!("f{j}")).collect();
    for (k, w) in [0, 500, 1400, 2000].windows(2).enumerate() {
        env.write(
            &format!("p{k}.csv"),
            to_csv(Some(&header), &rows[w[0]..w[1]]),
        );
    }
    let inputs = ["p0.csv", "p1.csv", "p2.csv"];
    for options in [
        &["--solver", "covariance", "-k", "3"][..],
        &["--solver", "covariance", "-k", "3", "--standardize"],
        &["--solver", "randomized", "-k", "2", "--seed", "5"],
    ] {
        let mut args = vec!["fit"];
        args.extend(inputs);
        args.extend(options);
        let mut one = args.clone();
        one.extend(["-o", "one.pca"]);
        env.ok(&one);
        let mut many = args.clone();
        many.extend(["-o", "hosts.pca"]);
        let out = hosts.mpirun(&env, 3, &[1, 2], &many);
        let said = stderr(&out);
        assert!(out.status.success(), "{options:?}:\n{said}");
        assert_eq!(said.matches("fitted ").count(), 1, "{said}");
        assert!(said.contains("over 3 MPI processes"), "{said}");
        let (a, b) = (model_json(&env, "hosts.pca"), model_json(&env, "one.pca"));
        assert_same_model(&a, &b, 1e-9);
    }
    std::fs::remove_file(env.path("hosts.pca")).unwrap();
    // Rank 2, on the second host, reads p2.csv: a bad value on its last line.
    let mut text = to_csv(Some(&header), &rows[1400..2000]);
    let at = text.trim_end().rfind('\n').unwrap() + 1;
    text.replace_range(at..at + 1, "?");
    env.write("p2.csv", text);
    let mut args = vec!["fit"];
    args.extend(inputs);
    args.extend(["-k", "2", "-o", "hosts.pca"]);
    let out = hosts.mpirun(&env, 3, &[1, 2], &args);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(said.matches("error:").count(), 1, "{said}");
    assert!(
        said.contains("cannot fit p0.csv and 2 more file(s): rank 2: p2.csv, line 601"),
        "{said}"
    );
    assert!(!env.path("hosts.pca").exists());
}
