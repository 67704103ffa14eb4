//! The house the source keeps to (docs/architecture.md): modules stand in rows, and a module
//! may use only modules in rows below its own; no two files use each other, directly or round a
//! circle; only the process runner starts processes; no command module uses another.
//!
//! The source is read as text (a small lexer drops comments, strings and `#[cfg(test)]` code), so
//! the rules hold for the code that ships, and a test module may reach wherever it likes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rows, bottom first. A module may use modules of lower rows only; a module not named here
/// fails the test, so a new module has to be given its row.
const HOUSE: &[(&str, &[&str])] = &[
    (
        "foundations: nothing about stacks",
        &["version", "os", "exit", "fsutil", "size"],
    ),
    ("the process runner", &["exec"]),
    (
        "schemas and arithmetic",
        &["manifest", "dataset", "vram", "examples"],
    ),
    ("the libraries stackpin can talk to", &["library"]),
    ("release-note knowledge", &["compat"]),
    (
        "the machine, the archive, the record",
        &["windows_installers", "host", "archive", "budget", "record"],
    ),
    (
        "judgements over them",
        &[
            "check",
            "pin",
            "outdated",
            "diagnose",
            "layers",
            "deployment",
        ],
    ),
    ("the two long jobs", &["install", "prove"]),
    ("pipelines over the jobs", &["doctor", "status", "up"]),
    ("the lab at a glance", &["report"]),
    ("the command line", &["cli"]),
    ("the binary", &["main"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// One source file, as the shipped build sees it.
struct SourceFile {
    /// Path below `src/`, with forward slashes.
    rel: String,
    /// The code with comments, string and char literals and `#[cfg(test)]` items blanked out.
    code: String,
}

/// The shipped source, read once for all the tests of this file.
fn source_files() -> &'static [SourceFile] {
    static FILES: std::sync::OnceLock<Vec<SourceFile>> = std::sync::OnceLock::new();
    FILES.get_or_init(read_source_files)
}

fn read_source_files() -> Vec<SourceFile> {
    let mut found = Vec::new();
    walk(&src(), &mut found);
    found.sort();
    let mut test_only = BTreeSet::new();
    let mut files: Vec<SourceFile> = found
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("a source file reads");
            let rel = path
                .strip_prefix(src())
                .expect("below src")
                .to_string_lossy()
                .replace('\\', "/");
            let blanked = blank_comments_and_literals(&text);
            test_only.extend(test_module_files(&rel, &blanked));
            SourceFile {
                rel,
                code: drop_test_items(&blanked),
            }
        })
        .collect();
    // Files that are declared `#[cfg(test)] mod x;` are test code as a whole.
    files.retain(|f| !test_only.contains(&f.rel));
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ reads")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folder a file's child modules live in: `a/mod.rs` and `a.rs` both keep theirs in `a/`.
fn child_dir(rel: &str) -> String {
    let stem = rel.trim_end_matches(".rs");
    match stem {
        "lib" | "main" => String::new(),
        s if s.ends_with("/mod") => format!("{}/", s.trim_end_matches("/mod")),
        s => format!("{s}/"),
    }
}

/// Child files declared as test code (`#[cfg(test)] mod x;`, `#[cfg(all(test, unix))] mod x;`),
/// found in the file's code before its test items are blanked (which removes the declarations).
fn test_module_files(rel: &str, code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    for (_, end) in test_attributes(&chars) {
        let decl: String = chars[end..chars.len().min(end + 80)].iter().collect();
        let decl = decl.trim_start();
        let decl = decl.strip_prefix("pub ").unwrap_or(decl);
        if let Some(after) = decl.strip_prefix("mod ") {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if after[name.len()..].trim_start().starts_with(';') {
                let dir = child_dir(rel);
                out.push(format!("{dir}{name}.rs"));
                out.push(format!("{dir}{name}/mod.rs"));
            }
        }
    }
    out
}

/// Where each `#[cfg(…)]` that holds only for tests starts and ends (`test`, `all(test, …)`;
/// not `not(test)`, nor `any(test, …)`, which ships).
fn test_attributes(chars: &[char]) -> Vec<(usize, usize)> {
    let opening: Vec<char> = "#[cfg(".chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + opening.len() <= chars.len() {
        if chars[i..].starts_with(&opening) {
            let Some(close) = (i..chars.len()).find(|&k| chars[k] == ']') else {
                break;
            };
            let inside: String = chars[i + opening.len()..close].iter().collect();
            let inside = inside.replace(char::is_whitespace, "");
            let all_of = inside
                .strip_prefix("all(")
                .and_then(|rest| rest.strip_suffix("))"));
            if inside == "test)" || all_of.is_some_and(|args| args.split(',').any(|a| a == "test"))
            {
                found.push((i, close + 1));
            }
            i = close + 1;
        } else {
            i += 1;
        }
    }
    found
}

/// Replaces comments, string literals and char literals with spaces, keeping line structure, so
/// a path inside a doc comment or a message is not taken for a use.
fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &chars[i..j.min(chars.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is blanked.
            let close = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&k| chars[k] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(end) => {
                    for _ in i..=end {
                        out.push(' ');
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks every item behind a test-only `#[cfg(…)]` (a `mod tests { … }`, a test-only function
/// or `use`): up to the first `;` before any `{`, or to the matching `}`.
fn drop_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    for (start, end) in test_attributes(&out) {
        let mut i = start;
        let mut depth = 0usize;
        while i < out.len() {
            let ch = out[i];
            if i >= end {
                if ch == '{' {
                    depth += 1;
                } else if ch == '}' {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        out[i] = ' ';
                        break;
                    }
                } else if ch == ';' && depth == 0 {
                    out[i] = ' ';
                    break;
                }
            }
            if ch != '\n' {
                out[i] = ' ';
            }
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Every path a file names through `crate::`, `super::`, `self::` or one of its own child
/// modules (`mod plan;` … `plan::Verdict`), as segments from the crate root, with `use` groups
/// (`crate::{a, b::{c, d}}`) spread out.
fn paths_used(file: &SourceFile) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let here = module_path(&file.rel);
    let children = child_modules(&file.code);
    let chars: Vec<char> = file.code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let at_word_start = i == 0
            || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':');
        let word: String = if at_word_start {
            chars[i..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .collect()
        } else {
            String::new()
        };
        let after = i + word.chars().count();
        if word.is_empty() || !chars[after..].starts_with(&[':', ':']) {
            i += word.chars().count().max(1);
            continue;
        }
        let (base, skip) = match word.as_str() {
            "crate" | "stackpin" => (Vec::new(), after + 2 - i),
            "self" => (here.clone(), after + 2 - i),
            "super" => {
                let mut base = here.clone();
                let mut j = i;
                let sup: Vec<char> = "super::".chars().collect();
                while chars[j..].starts_with(&sup) {
                    base.pop();
                    j += sup.len();
                }
                (base, j - i)
            }
            child if children.contains(child) => (here.clone(), 0),
            _ => {
                i = after + 2;
                continue;
            }
        };
        let (paths, used) = parse_tree(&chars[i + skip..]);
        for p in paths {
            let mut full = base.clone();
            full.extend(p);
            out.push(full);
        }
        i += skip + used.max(1);
    }
    out
}

/// The child modules a file declares (`mod plan;`, `pub mod live;`, `pub(crate) mod x;`).
fn child_modules(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            Some(name.to_string())
        })
        .collect()
}

/// Reads `a::b::{c, d::e}` into its paths; returns them and how many chars it read.
fn parse_tree(chars: &[char]) -> (Vec<Vec<String>>, usize) {
    let mut i = 0;
    let mut prefix = Vec::new();
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i < chars.len() && chars[i] == '{' {
            i += 1;
            let mut all = Vec::new();
            loop {
                while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                    i += 1;
                }
                if i >= chars.len() || chars[i] == '}' {
                    i += 1;
                    break;
                }
                let (inner, used) = parse_tree(&chars[i..]);
                for p in inner {
                    let mut full = prefix.clone();
                    full.extend(p);
                    all.push(full);
                }
                i += used.max(1);
            }
            return (all, i);
        }
        let word: String = chars[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if word.is_empty() {
            return (vec![prefix], i);
        }
        i += word.chars().count();
        prefix.push(word);
        if chars[i..].starts_with(&[':', ':']) {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// A file's module path from the crate root: `install/plan.rs` → [install, plan].
fn module_path(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" || stem == "main" {
        return Vec::new();
    }
    stem.split('/').map(str::to_string).collect()
}

/// The file a path lands in: the deepest module of the path that is a file of its own.
fn file_of(path: &[String], files: &BTreeSet<String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let stem = path[..n].join("/");
        [format!("{stem}.rs"), format!("{stem}/mod.rs")]
            .into_iter()
            .find(|candidate| files.contains(candidate))
    })
}

fn top_module(rel: &str) -> String {
    let first = rel.split('/').next().unwrap_or(rel);
    first.trim_end_matches(".rs").to_string()
}

fn row_of(module: &str) -> Option<usize> {
    HOUSE
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

struct Graph {
    modules: BTreeMap<String, BTreeSet<String>>,
    files: BTreeMap<String, BTreeSet<String>>,
}

/// The source's arrows, worked out once for all the tests of this file.
fn graph() -> &'static Graph {
    static GRAPH: std::sync::OnceLock<Graph> = std::sync::OnceLock::new();
    GRAPH.get_or_init(read_graph)
}

fn read_graph() -> Graph {
    let sources = source_files();
    let names: BTreeSet<String> = sources.iter().map(|f| f.rel.clone()).collect();
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in sources {
        let from = top_module(&file.rel);
        modules.entry(from.clone()).or_default();
        // main.rs reaches the library as `stackpin::`, which the lexer reads as a root path.
        for path in paths_used(file) {
            let Some(first) = path.first() else { continue };
            if first != &from && names_module(first, &names) {
                modules
                    .entry(from.clone())
                    .or_default()
                    .insert(first.clone());
            }
            if let Some(target) = file_of(&path, &names)
                && target != file.rel
                && !is_ancestor_or_descendant(&file.rel, &target)
            {
                files.entry(file.rel.clone()).or_default().insert(target);
            }
        }
    }
    Graph { modules, files }
}

fn names_module(name: &str, files: &BTreeSet<String>) -> bool {
    files.contains(&format!("{name}.rs")) || files.contains(&format!("{name}/mod.rs"))
}

/// A module file and the files of its own submodules use each other by nature (`pub use` one
/// way, `super::` the other); that is one room, not a circle.
fn is_ancestor_or_descendant(a: &str, b: &str) -> bool {
    let (da, db) = (child_dir(a), child_dir(b));
    (!da.is_empty() && b.starts_with(&da)) || (!db.is_empty() && a.starts_with(&db))
}

/// Strongly connected groups of more than one node (the circles), each sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = edges.keys().collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut groups = BTreeSet::new();
    for n in &nodes {
        let group: Vec<String> = nodes
            .iter()
            .filter(|m| reaches[*n].contains(**m) && reaches[*m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

#[test]
fn every_module_has_its_row_in_the_house() {
    let graph = graph();
    let homeless: Vec<&String> = graph
        .modules
        .keys()
        .filter(|m| *m != "lib" && row_of(m).is_none())
        .collect();
    assert!(
        homeless.is_empty(),
        "modules without a row in tests/architecture.rs's HOUSE (give each its row, and docs/architecture.md's picture): {homeless:?}"
    );
}

#[test]
fn arrows_point_down_the_house() {
    let graph = graph();
    let mut against = Vec::new();
    for (from, tos) in &graph.modules {
        let Some(row) = row_of(from) else { continue };
        for to in tos {
            let Some(to_row) = row_of(to) else { continue };
            if to_row >= row {
                against.push(format!("{from} (row {row}) uses {to} (row {to_row})"));
            }
        }
    }
    assert!(
        against.is_empty(),
        "arrows that run sideways or back up the house: {against:#?}"
    );
}

#[test]
fn no_two_files_use_each_other() {
    let graph = graph();
    let found = circles(&graph.files);
    assert!(found.is_empty(), "files in a circle: {found:#?}");
}

#[test]
fn only_the_process_runner_starts_processes() {
    let starting: Vec<&str> = source_files()
        .iter()
        .filter(|f| f.code.contains("Command::new"))
        .map(|f| f.rel.as_str())
        .filter(|rel| !rel.starts_with("exec/"))
        .collect();
    assert!(
        starting.is_empty(),
        "files outside src/exec/ that start processes (go through exec): {starting:?}"
    );
}

#[test]
fn no_command_module_uses_another() {
    let graph = graph();
    let mut crossing = Vec::new();
    for (from, tos) in &graph.files {
        if !is_command(from) {
            continue;
        }
        crossing.extend(
            tos.iter()
                .filter(|to| is_command(to))
                .map(|to| format!("{from} uses {to}")),
        );
    }
    assert!(
        crossing.is_empty(),
        "command modules that use another (move what they share below cli/ or into a shared cli module): {crossing:#?}"
    );
}

fn is_command(rel: &str) -> bool {
    rel.starts_with("cli/") && rel.ends_with("_cmd.rs")
}

#[test]
fn the_reader_sees_through_comments_strings_groups_and_tests() {
    let file = SourceFile {
        rel: "install/plan.rs".into(),
        code: drop_test_items(&blank_comments_and_literals(
            "use crate::{host::{self, System}, manifest::Manifest};\n\
             // crate::record is only mentioned\n\
             let s = \"crate::doctor\"; let c = '\\''; let l: &'a str = r#\"crate::up\"#;\n\
             fn f() { super::proof::prove_layer(); crate::exec::run(); }\n\
             mod files;\nfn g() { files::ArchivedFile::new(); std::fs::read(); self::g(); }\n\
             #[cfg(test)]\nmod tests { use crate::prove::Thing; }\n",
        )),
    };
    let used: Vec<String> = paths_used(&file).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        used,
        [
            "host::self",
            "host::System",
            "manifest::Manifest",
            "install::proof::prove_layer",
            "exec::run",
            "install::plan::files::ArchivedFile::new",
            "install::plan::g",
        ]
    );
}

/// The rows as docs/architecture.md's picture draws them:
/// `  7 │ install · prove     the two long jobs`.
fn drawn_rows() -> Vec<(usize, Vec<String>)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md reads");
    let picture = doc
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md opens with its picture");
    picture
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once('│')?;
            let row: usize = number.trim().parse().ok()?;
            let modules = rest.trim_start().split("   ").next()?;
            Some((
                row,
                modules.split(" · ").map(|m| m.trim().to_string()).collect(),
            ))
        })
        .collect()
}

#[test]
fn the_architecture_doc_draws_the_house_the_test_holds() {
    let mut drawn = drawn_rows();
    drawn.sort();
    let held: Vec<(usize, Vec<String>)> = HOUSE
        .iter()
        .enumerate()
        .map(|(row, (_, modules))| (row, modules.iter().map(|m| m.to_string()).collect()))
        .collect();
    assert_eq!(
        drawn, held,
        "docs/architecture.md's picture and tests/architecture.rs's HOUSE must name the same rows"
    );
}
