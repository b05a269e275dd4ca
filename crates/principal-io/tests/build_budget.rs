//! Issue 24's build-time budget: the `parquet` crate is built without its `arrow` layer, whose
//! casting kernels (arrow-cast) were the largest unit of a release build. Parquet is read and
//! written with the crate's own column readers and writers, and Arrow IPC needs only
//! arrow-array, arrow-select and arrow-data. Cargo.lock lists only the dependencies some
//! feature turns on, so enabling `arrow` again (in any crate, a dev-dependency included) shows
//! here.

#[test]
fn parquet_is_built_without_arrow_and_nothing_builds_arrow_cast() {
    let lock = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"),
    )
    .unwrap();
    let packages: Vec<&str> = lock.split("[[package]]").collect();
    let parquet = packages
        .iter()
        .find(|p| p.contains("\nname = \"parquet\"\n"))
        .expect("parquet in Cargo.lock");
    let arrow_deps: Vec<&str> = parquet
        .lines()
        .map(|l| l.trim().trim_matches(|c| c == '"' || c == ','))
        .filter(|l| l.starts_with("arrow"))
        .collect();
    assert_eq!(arrow_deps, Vec::<&str>::new(), "parquet's dependencies");
    assert!(
        !packages
            .iter()
            .any(|p| p.contains("\nname = \"arrow-cast\"\n")),
        "arrow-cast is in Cargo.lock"
    );
}
