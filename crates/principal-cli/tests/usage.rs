//! Usage errors (exit 2), help and version.

use crate::common;

use common::*;

#[test]
fn usage_errors_exit_two() {
    let env = Env::new();
    let i = iris();
    let cases: &[(&[&str], &str)] = &[
        (
            &["fit", &i, "--output", "m", "--frobnicate"],
            "--frobnicate",
        ),
        (
            &[
                "fit",
                &i,
                "--output",
                "m",
                "--components",
                "2",
                "--variance",
                "0.9",
            ],
            "cannot be used with",
        ),
        (
            &["fit", &i, "--output", "m", "--ddof", "2"],
            "--ddof 2 is not allowed",
        ),
        (&["fit", &i, "--output", "m", "--solver", "magic"], "magic"),
        (
            &["fit", &i, "--output", "m", "--components", "0"],
            "--components 0 is not allowed",
        ),
        (&["fit", &i, "--output", "m", "--components", "two"], "two"),
        (
            &["fit", &i, "--output", "m", "--variance", "1.5"],
            "--variance 1.5 is outside the allowed range (0, 1]",
        ),
        (&["fit", &i, "--output", "m", "--variance", "0"], "(0, 1]"),
        (
            &["fit", &i, "--output", "m", "--variance", "-0.5"],
            "--variance -0.5 is outside the allowed range (0, 1]",
        ),
        (
            &["fit", &i, "--output", "m", "--components", "-1"],
            "--components -1 is not a whole number",
        ),
        (
            &["fit", &i, "--output", "m", "--precision", "half"],
            "[possible values: full, mixed]",
        ),
        (
            &["fit", &i, "--output", "m", "--randomized-method", "lanczos"],
            "[possible values: krylov, subspace]",
        ),
        (
            &["fit", &i, "--output", "m", "--power-method", "inverse"],
            "[possible values: block, deflation]",
        ),
        (&["fit", &i], "--output"),
        (&["fit", "--output", "m"], "INPUT"),
        (&["inspect"], "MODEL"),
        (&["transform", "m", "--output", "c"], "INPUT"),
        (&["frobnicate"], "frobnicate"),
        // The pixel count overflows: wrapped, 9223372036854776200 × 2 would be 784 = 28×28.
        (
            &[
                "report",
                "m",
                "--image-shape",
                "9223372036854776200x2",
                "-o",
                "m",
            ],
            "--image-shape \"9223372036854776200x2\": image shape 9223372036854776200×2 has \
             more pixels than this machine can count",
        ),
        (
            &["choose", &i, "--permutations", "18446744073709551616"],
            "--permutations 18446744073709551616 is not a whole number",
        ),
    ];
    for (args, needle) in cases {
        let out = env.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}:\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{needle:?} missing for {args:?}:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"));
        assert!(!env.path("m").exists());
    }
}

#[test]
fn help_and_version_succeed() {
    let env = Env::new();
    for args in [&["--help"][..], &["fit", "--help"], &["--version"]] {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
    // No arguments at all: help on stderr, usage error.
    assert_eq!(env.run(&[]).status.code(), Some(2));
}
