//! Embeds every `data/*.yaml` release table into the binary as the built-in data set.
//!
//! The set is generic over the files in `data/`: a table added there is compiled in without
//! touching the code that carries it (`src/dataset`); which tables the binary *needs* is the
//! loader's business (`compat`).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=data");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let data = Path::new(&manifest_dir).join("data");
    let mut names: Vec<String> = std::fs::read_dir(&data)
        .expect("data/ holds the release tables")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    let mut out = String::from(
        "/// Every `data/*.yaml` table as compiled in: (file name, text), sorted by name.\n\
         pub(crate) static BUILT_IN_TABLES: &[(&str, &str)] = &[\n",
    );
    for name in &names {
        let path = data.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("built_in_tables.rs"), out)
        .expect("writing built_in_tables.rs");
}
