//! The crate's modules import one way only, downwards through declared layers, and without
//! cycles:
//!
//! ```text
//! 5  crate (lib.rs)  re-exports only
//! 4  model_file      the safetensors model file, written through `write`
//!    labels          the labels of a data set's rows (label files, a column of the data)
//! 3  reader  write   the data set of shards (dispatches to the formats) | atomic writes
//! 2  format          one reader per format; inside it only npy → binary, idx → binary,
//!                    mtx → h5ad (the sparse inputs), and the files of columnar/ among
//!                    themselves
//! 1  read            the leaves every format uses (opening, options, columns, row buffers)
//! 0  error           IoError
//! ```
//!
//! Every `use` and every inline path of the library's source (`crate::…`, `super::…`,
//! `self::…`, and paths through a child module) is resolved to the module it names, then
//! checked against the table. Code under `#[cfg(test)]` may import anything and is not read.
//! A failure names the file and the import. With `--nocapture` the module graph is printed:
//!
//! `cargo test --release -p principal-io --test layering -- --nocapture`

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The layer of every top-level module (`crate` is lib.rs). A module may import a module of a
/// lower layer; within its own top-level module, only what [`INSIDE`] allows.
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("read", 1),
    ("format", 2),
    ("reader", 3),
    ("write", 3),
    ("model_file", 4),
    ("h5ad_into", 4),
    ("labels", 4),
    ("statistics_file", 5),
    ("model_kinds", 5),
    ("crate", 6),
];

/// Imports allowed inside one top-level module: from any module under the first path to any
/// module under the second (a path covers itself and everything below it).
const INSIDE: &[(&str, &str)] = &[
    ("read", "read"),
    ("format::npy", "format::binary"),
    ("format::idx", "format::binary"),
    ("format::columnar", "format::columnar"),
    // SparseFile opens an .h5ad file's CSR or CSC matrix as it opens MatrixMarket text.
    ("format::mtx", "format::h5ad"),
    ("reader", "reader"),
    ("model_kinds", "model_kinds"),
];

/// Modules compiled for tests only: they may import anything and are left out of the graph.
const TEST_ONLY: &[&str] = &["test_util"];

#[test]
fn imports_flow_down_the_declared_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = source_files(&src);
    let graph = Graph::of(&files, TEST_ONLY);
    println!("{}", graph.describe(LAYERS));
    let problems = graph.check(LAYERS, INSIDE);
    assert!(
        problems.is_empty(),
        "the module layering is broken:\n{}",
        problems.join("\n")
    );
    // The tables name only modules that exist, so that they stay a true picture.
    for name in LAYERS.iter().map(|(name, _)| *name).chain(
        INSIDE
            .iter()
            .flat_map(|(from, to)| [*from, *to])
            .chain(TEST_ONLY.iter().copied()),
    ) {
        assert!(
            files.iter().any(|(path, _)| module_of(path) == name),
            "the layering tables name {name}, which is no module of the crate"
        );
    }
    // Not vacuous: the reader stack's known imports were found.
    for (from, to) in [
        ("format::csv", "read::rows"),
        ("reader::shard", "format::columnar::parquet"),
        ("model_file", "write"),
        ("labels", "format::idx"),
        ("crate", "reader::chunk_reader"),
    ] {
        assert!(
            graph.edges[from].contains_key(to),
            "the scan missed {from} → {to}"
        );
    }
}

#[test]
fn an_upward_import_is_named_with_its_file() {
    let files = fake_crate(&[
        ("lib.rs", "mod error; mod read; pub use read::open::Opened;"),
        ("error.rs", "pub struct IoError;"),
        ("read/mod.rs", "pub(crate) mod open;"),
        (
            "read/open.rs",
            "use crate::error::IoError;\nuse crate::format::npy::{self, MAGIC};",
        ),
        ("format/mod.rs", "pub(crate) mod npy;"),
        ("format/npy.rs", "use crate::error::IoError;"),
    ]);
    let problems = Graph::of(&files, &[]).check(LAYERS, INSIDE);
    assert_eq!(
        problems,
        [
            "src/read/open.rs: `crate::format::npy` — read::open (layer 1) may not import \
             format::npy (layer 2): imports go to lower layers only"
        ]
    );
}

#[test]
fn a_cycle_inside_a_subsystem_is_found() {
    let files = fake_crate(&[
        ("lib.rs", "mod read;"),
        ("read/mod.rs", "mod rows; mod matrix;"),
        (
            "read/rows.rs",
            "use super::matrix::Matrix; fn f() -> Matrix { todo!() }",
        ),
        (
            "read/matrix.rs",
            "pub struct Matrix; fn g() { let _ = crate::read::rows::grow(); }",
        ),
    ]);
    let problems = Graph::of(&files, &[]).check(LAYERS, INSIDE);
    assert_eq!(
        problems,
        ["a cycle: read::matrix → read::rows → read::matrix"]
    );
}

#[test]
fn imports_between_formats_and_modules_outside_the_table_are_refused() {
    let files = fake_crate(&[
        ("lib.rs", "mod format; mod extra;"),
        ("format/mod.rs", "mod csv; mod binary; mod npy;"),
        ("format/csv.rs", "fn f() { super::npy::parse(); }"),
        ("format/npy.rs", "use crate::format::binary::BinaryRows;"),
        ("format/binary.rs", "pub struct BinaryRows;"),
        ("extra.rs", ""),
    ]);
    let problems = Graph::of(&files, &[]).check(LAYERS, INSIDE);
    assert_eq!(
        problems,
        [
            "src/extra.rs: module extra has no layer: add it to LAYERS",
            "src/format/csv.rs: `super::npy::parse` — format::csv may not import format::npy: \
             inside format only format::npy → format::binary, format::idx → format::binary, \
             format::columnar → format::columnar, format::mtx → format::h5ad",
        ]
    );
}

#[test]
fn test_code_comments_and_strings_are_not_imports() {
    let files = fake_crate(&[
        ("lib.rs", "mod read; mod model_file;"),
        ("read/mod.rs", ""),
        ("model_file.rs", "pub fn save() {}"),
        (
            "read/matrix.rs",
            r##"
            //! See [`save`](crate::model_file::save).
            /* use crate::model_file; */
            const A: &str = "crate::model_file::save";
            const B: &str = r#"use crate::model_file;"#;
            const C: char = '{';
            fn f<'a>(x: &'a str) -> &'a str { x }
            #[cfg(test)]
            mod tests {
                use crate::model_file::save;
            }
            "##,
        ),
    ]);
    let graph = Graph::of(&files, &[]);
    assert!(graph.check(LAYERS, INSIDE).is_empty());
    assert!(graph.edges["read::matrix"].is_empty(), "{:?}", graph.edges);
}

/// The library's `.rs` files under `src`, as paths relative to the crate (`src/read/open.rs`)
/// with their text, sorted.
fn source_files(src: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).expect("source is UTF-8");
                let relative = path
                    .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
                    .expect("under the crate")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((relative, text));
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
}

fn fake_crate(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(path, text)| (format!("src/{path}"), (*text).to_owned()))
        .collect()
}

/// `src/lib.rs` → `crate`, `src/read/mod.rs` → `read`, `src/read/open.rs` → `read::open`.
fn module_of(file: &str) -> String {
    let path = file.strip_prefix("src/").unwrap_or(file);
    let path = path.strip_suffix(".rs").unwrap_or(path);
    let path = path.strip_suffix("/mod").unwrap_or(path);
    if path == "lib" {
        "crate".to_owned()
    } else {
        path.replace('/', "::")
    }
}

/// The top-level module of a module path.
fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// Whether `module` is `prefix` or under it.
fn within(module: &str, prefix: &str) -> bool {
    module == prefix
        || module
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::"))
}

/// The imports of every module: module → (imported module → the first path naming it).
struct Graph {
    /// Module → its file.
    files: BTreeMap<String, String>,
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    /// The graph of `files` (path, text), leaving out the modules in `test_only`.
    fn of(files: &[(String, String)], test_only: &[&str]) -> Graph {
        let files: Vec<(String, &String, &String)> = files
            .iter()
            .map(|(path, text)| (module_of(path), path, text))
            .filter(|(module, _, _)| !test_only.contains(&top(module)))
            .collect();
        let modules: BTreeSet<String> = files.iter().map(|(m, _, _)| m.clone()).collect();
        let mut graph = Graph {
            files: BTreeMap::new(),
            edges: BTreeMap::new(),
        };
        for (module, path, text) in &files {
            let tokens = without_test_code(tokens(text));
            let mut imports = BTreeMap::new();
            for written in references(&tokens, module, &modules) {
                if let Some(target) = resolve(&written, module, &modules)
                    && target != *module
                {
                    imports.entry(target).or_insert_with(|| written.join("::"));
                }
            }
            graph.files.insert(module.clone(), (*path).clone());
            graph.edges.insert(module.clone(), imports);
        }
        graph
    }

    /// Every import the layer table does not allow, every module without a layer, and a
    /// cycle if there is one.
    fn check(&self, layers: &[(&str, u32)], inside: &[(&str, &str)]) -> Vec<String> {
        let layer_of = |module: &str| {
            layers
                .iter()
                .find(|(name, _)| *name == top(module))
                .map(|&(_, layer)| layer)
        };
        let mut problems = Vec::new();
        for (module, file) in &self.files {
            if layer_of(module).is_none() {
                problems.push(format!(
                    "{file}: module {module} has no layer: add it to LAYERS"
                ));
            }
        }
        for (from, imports) in &self.edges {
            let file = &self.files[from];
            let Some(from_layer) = layer_of(from) else {
                continue;
            };
            for (to, written) in imports {
                let Some(to_layer) = layer_of(to) else {
                    continue;
                };
                if top(from) != top(to) {
                    if to_layer >= from_layer {
                        problems.push(format!(
                            "{file}: `{written}` — {from} (layer {from_layer}) may not import \
                             {to} (layer {to_layer}): imports go to lower layers only"
                        ));
                    }
                } else if !inside.iter().any(|(a, b)| within(from, a) && within(to, b)) {
                    let allowed: Vec<String> = inside
                        .iter()
                        .filter(|(a, _)| top(a) == top(from))
                        .map(|(a, b)| format!("{a} → {b}"))
                        .collect();
                    problems.push(format!(
                        "{file}: `{written}` — {from} may not import {to}: inside {} only {}",
                        top(from),
                        if allowed.is_empty() {
                            "nothing".to_owned()
                        } else {
                            allowed.join(", ")
                        }
                    ));
                }
            }
        }
        if let Some(cycle) = self.cycle() {
            problems.push(format!("a cycle: {}", cycle.join(" → ")));
        }
        problems
    }

    /// A cycle of imports, as the modules along it with the first repeated at the end.
    fn cycle(&self) -> Option<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Open,
            Done,
        }
        fn visit<'a>(
            edges: &'a BTreeMap<String, BTreeMap<String, String>>,
            module: &'a str,
            marks: &mut BTreeMap<&'a str, Mark>,
            stack: &mut Vec<&'a str>,
        ) -> Option<Vec<String>> {
            marks.insert(module, Mark::Open);
            stack.push(module);
            for next in edges.get(module).into_iter().flat_map(BTreeMap::keys) {
                match marks.get(next.as_str()) {
                    Some(Mark::Open) => {
                        let at = stack.iter().position(|m| m == next)?;
                        let mut cycle: Vec<String> =
                            stack[at..].iter().map(|m| (*m).to_owned()).collect();
                        cycle.push(next.clone());
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        if let Some(cycle) = visit(edges, next, marks, stack) {
                            return Some(cycle);
                        }
                    }
                }
            }
            stack.pop();
            marks.insert(module, Mark::Done);
            None
        }
        let mut marks = BTreeMap::new();
        for module in self.edges.keys() {
            if !marks.contains_key(module.as_str())
                && let Some(cycle) = visit(&self.edges, module, &mut marks, &mut Vec::new())
            {
                return Some(cycle);
            }
        }
        None
    }

    /// The graph, one module a line, by layer from the top.
    fn describe(&self, layers: &[(&str, u32)]) -> String {
        let layer_of = |module: &str| {
            layers
                .iter()
                .find(|(name, _)| *name == top(module))
                .map_or("?".to_owned(), |(_, layer)| layer.to_string())
        };
        let mut rows: Vec<(String, &String)> = self
            .edges
            .keys()
            .map(|module| (layer_of(module), module))
            .collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let mut out =
            String::from("principal-io's modules (layer, module → the modules it imports):\n");
        for (layer, module) in rows {
            let imports: Vec<&str> = self.edges[module].keys().map(String::as_str).collect();
            out.push_str(&format!(
                "  {layer}  {module:<26} → {}\n",
                if imports.is_empty() {
                    "(nothing)".to_owned()
                } else {
                    imports.join(", ")
                }
            ));
        }
        out
    }
}

/// The module paths' segments under the crate root: `crate` → [], `read::open` → [read, open].
fn segments(module: &str) -> Vec<String> {
    if module == "crate" {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    }
}

fn join(segments: &[String]) -> String {
    if segments.is_empty() {
        "crate".to_owned()
    } else {
        segments.join("::")
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Whether `name` is a child module of `module`.
fn is_child(module: &str, name: &str, modules: &BTreeSet<String>) -> bool {
    let mut path = segments(module);
    path.push(name.to_owned());
    modules.contains(&join(&path))
}

/// The module of this crate a path written in `module` names (the longest known module at
/// its start; the crate root for items of lib.rs); `None` for paths into other crates.
fn resolve(written: &[String], module: &str, modules: &BTreeSet<String>) -> Option<String> {
    let (mut base, mut rest) = match written.first()?.as_str() {
        "crate" => (Vec::new(), &written[1..]),
        "self" => (segments(module), &written[1..]),
        "super" => (segments(module), written),
        first if is_child(module, first, modules) => (segments(module), written),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    (1..=base.len())
        .rev()
        .map(|k| join(&base[..k]))
        .find(|m| modules.contains(m))
        .or_else(|| Some("crate".to_owned()))
}

/// Every path in `tokens` that may name a module of this crate: each path of a `use` tree, and
/// each inline path starting with `crate`, `super`, `self` or a child module of `module`.
fn references(tokens: &[String], module: &str, modules: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].as_str();
        if token == "use" {
            i = use_tree(tokens, i + 1, &[], &mut out);
            continue;
        }
        let starts_path = (i == 0 || tokens[i - 1] != "::")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (matches!(token, "crate" | "super" | "self") || is_child(module, token, modules));
        if starts_path {
            let mut path = vec![token.to_owned()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| t == "::")
                && tokens.get(j + 1).is_some_and(|t| is_ident(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            out.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Parses the `use` tree at `i`, pushing each of its paths (after `prefix`) to `out`; returns
/// the index after it. A path into another crate written `::name` keeps its `::`.
fn use_tree(
    tokens: &[String],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let at = |i: usize| tokens.get(i).map_or("", String::as_str);
    let mut path = prefix.to_vec();
    if at(i) == "::" {
        path.push("::".to_owned());
        i += 1;
    }
    loop {
        match at(i) {
            "{" => {
                i += 1;
                while i < tokens.len() && at(i) != "}" {
                    i = use_tree(tokens, i, &path, out);
                    if at(i) == "," {
                        i += 1;
                    }
                }
                return i + 1;
            }
            "*" => {
                out.push(path);
                return i + 1;
            }
            word if is_ident(word) => {
                // `{self, …}` names the prefix itself.
                if word != "self" || path.is_empty() {
                    path.push(word.to_owned());
                }
                i += 1;
                if at(i) == "::" {
                    i += 1;
                    continue;
                }
                if at(i) == "as" {
                    i += 2;
                }
                out.push(path);
                return i;
            }
            _ => return i + 1,
        }
    }
}

/// `tokens` without the items under `#[cfg(test)]` (test modules and their declarations).
fn without_test_code(mut tokens: Vec<String>) -> Vec<String> {
    const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    while let Some(start) = tokens
        .windows(CFG_TEST.len())
        .position(|w| w.iter().zip(CFG_TEST).all(|(a, b)| a == b))
    {
        let mut end = start + CFG_TEST.len();
        let mut depth = 0usize;
        while end < tokens.len() {
            let token = tokens[end].as_str();
            end += 1;
            match token {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                ";" if depth == 0 => break,
                _ => {}
            }
        }
        tokens.drain(start..end);
    }
    tokens
}

/// Rust source as tokens: identifiers (and numbers), `::`, and single punctuation characters;
/// comments are dropped and every string or character literal is one `""` token, so that
/// nothing written in them is taken for a path.
fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let literal = || "\"\"".to_owned();
    // The index after the quoted string starting at `i`.
    let string_end = |mut i: usize| {
        i += 1;
        while i < c.len() {
            match c[i] {
                '\\' => i += 2,
                '"' => return i + 1,
                _ => i += 1,
            }
        }
        i
    };
    // The index after the character literal starting at `i`, if there is one (else a lifetime).
    let char_end = |i: usize| {
        if at(i + 1) == '\\' {
            let mut j = i + 2;
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            Some(j + 1)
        } else if at(i + 2) == '\'' {
            Some(i + 3)
        } else {
            None
        }
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = string_end(i);
            out.push(literal());
        } else if ch == '\'' {
            match char_end(i) {
                Some(end) => {
                    i = end;
                    out.push(literal());
                }
                None => {
                    out.push("'".to_owned());
                    i += 1;
                }
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = (word == "r" || word == "br") && matches!(at(i), '"' | '#');
            if raw {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i += hashes + 1;
                    while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                        i += 1;
                    }
                    i += hashes + 1;
                    out.push(literal());
                    continue;
                }
            }
            if word == "b" && at(i) == '"' {
                i = string_end(i);
                out.push(literal());
            } else if word == "b" && at(i) == '\'' {
                i = char_end(i).unwrap_or(i + 1);
                out.push(literal());
            } else {
                out.push(word);
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push("::".to_owned());
            i += 2;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}
