//! Hints a user can paste. Domain messages name fixes as `stackpin …` command templates
//! (`stackpin repair MANIFEST`); this module completes every such command from what this run was
//! given — the manifest path, `--archive`, `--gpu` — so that the fix runs exactly as printed.
//!
//! The rules come from clap's own description of each subcommand, not from a list kept here: a
//! subcommand that takes a manifest gets this run's, one that takes `--gpu` gets this run's GPU.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::CommandFactory;

/// What the user ran, as far as a hint needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The manifest this run was given.
    pub manifest: Option<PathBuf>,
    /// `--archive` (or `STACKPIN_ARCHIVE`), when the user named one.
    pub archive: Option<PathBuf>,
    /// `--gpu`, when the user named one.
    pub gpu: Option<u32>,
    /// The run is `up`: a fix that says to fetch again means to run `up` again (it fetches
    /// what is missing, then goes on).
    pub up: bool,
}

impl Invocation {
    /// The same run, about another stack (`--all` walks several manifests).
    pub fn for_manifest(&self, manifest: impl Into<PathBuf>) -> Self {
        Self {
            manifest: Some(manifest.into()),
            ..self.clone()
        }
    }

    /// Every backticked `stackpin …` command in `text`, completed from this invocation.
    pub fn complete(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 32);
        let mut rest = text;
        while let Some(open) = rest.find('`') {
            let Some(len) = rest[open + 1..].find('`') else {
                break;
            };
            let span = &rest[open + 1..open + 1 + len];
            out.push_str(&rest[..=open]);
            out.push_str(
                &self
                    .complete_command(span)
                    .unwrap_or_else(|| span.to_string()),
            );
            out.push('`');
            rest = &rest[open + len + 2..];
        }
        out.push_str(rest);
        out
    }

    /// One command line completed, or `None` when it is not a stackpin command clap knows.
    pub fn complete_command(&self, line: &str) -> Option<String> {
        let mut words = shlex::split(line)?;
        let at = words.iter().position(|w| w == "stackpin")?;
        if words[..at].iter().any(|w| w != "sudo") {
            return None;
        }
        let root = command_tree();
        // Walk to the deepest subcommand named (`data update`, `record export`).
        let mut command = root;
        let mut end = at + 1;
        while let Some(next) = words.get(end).and_then(|w| command.find_subcommand(w)) {
            command = next;
            end += 1;
        }
        if end == at + 1 {
            return None;
        }
        if self.up && words[at + 1] == "fetch" {
            words[at + 1] = "up".to_string();
            if let Some(up) = root.find_subcommand("up") {
                command = up;
            }
        }
        let takes = |id: &str| command.get_arguments().any(|a| a.get_id() == id);
        let manifest_arg = command
            .get_arguments()
            .find(|a| a.is_positional() && matches!(a.get_id().as_str(), "manifest" | "manifests"));

        if let Some(manifest) = &self.manifest {
            let path = manifest.display().to_string();
            let mut named = false;
            for word in &mut words[end..] {
                if word == "MANIFEST" {
                    *word = path.clone();
                    named = true;
                }
            }
            let has_positional = positional_count(command, &words[end..]) > 0;
            let wants_all = words[end..].iter().any(|w| w == "--all");
            if manifest_arg.is_some() && !named && !has_positional && !wants_all {
                words.insert(end, path);
            }
        }
        let subcommand = words[at + 1].as_str();
        if let Some(archive) = &self.archive
            && USES_ARCHIVE.contains(&subcommand)
            && !words.iter().any(|w| w == "--archive")
        {
            words.push("--archive".into());
            words.push(archive.display().to_string());
        }
        if let Some(gpu) = self.gpu
            && takes("gpu")
            && !words.iter().any(|w| w == "--gpu")
        {
            words.push("--gpu".into());
            words.push(gpu.to_string());
        }
        let quoted: Vec<String> = words
            .iter()
            .map(|w| {
                shlex::try_quote(w)
                    .map(|q| q.into_owned())
                    .unwrap_or_else(|_| w.clone())
            })
            .collect();
        Some(quoted.join(" "))
    }
}

/// The subcommands that read or write the archive; `--archive` is global, so clap alone cannot
/// tell which of them use it.
const USES_ARCHIVE: &[&str] = &[
    "fetch", "audit", "bundle", "unbundle", "plan", "install", "prove", "up", "doctor", "repair",
    "status", "outdated", "record", "measure",
];

/// How many positional values `words` (everything after the subcommand) holds: words that are
/// neither flags nor a flag's value. `--` ends the flags (`measure -- CMD`).
fn positional_count(command: &clap::Command, words: &[String]) -> usize {
    let mut count = 0;
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if word == "--" {
            return count + iter.count();
        }
        if let Some(flag) = word.strip_prefix("--") {
            let (name, inline) = match flag.split_once('=') {
                Some((name, _)) => (name, true),
                None => (flag, false),
            };
            let takes_value = command
                .get_arguments()
                .find(|a| a.get_long() == Some(name))
                .is_some_and(|a| a.get_action().takes_values());
            if takes_value && !inline {
                iter.next();
            }
        } else if word.starts_with('-') && word.len() > 1 {
            let short = word.chars().nth(1);
            let takes_value = command
                .get_arguments()
                .find(|a| a.get_short() == short)
                .is_some_and(|a| a.get_action().takes_values());
            if takes_value && word.len() == 2 {
                iter.next();
            }
        } else {
            count += 1;
        }
    }
    count
}

/// stackpin's command tree, built once: a report can quote dozens of hints.
fn command_tree() -> &'static clap::Command {
    static TREE: OnceLock<clap::Command> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut root = crate::cli::Cli::command();
        root.build();
        root
    })
}

static CURRENT: OnceLock<Invocation> = OnceLock::new();

/// Remember what this run was given; the first call wins (one run, one invocation).
pub fn set_current(invocation: Invocation) {
    let _ = CURRENT.set(invocation);
}

/// What this run was given (empty before the command line is parsed).
pub fn current() -> Invocation {
    CURRENT.get().cloned().unwrap_or_default()
}

thread_local! {
    /// The stack an `--all` walk is reporting on right now (see [`for_stack`]).
    static STACK: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// Runs `report` with hints completed for the stack whose manifest is `manifest`: `--all`
/// reports several stacks, and each one's fixes name its own manifest.
pub fn for_stack<T>(manifest: &std::path::Path, report: impl FnOnce() -> T) -> T {
    let before = STACK.with(|s| s.replace(Some(manifest.to_path_buf())));
    let out = report();
    STACK.with(|s| *s.borrow_mut() = before);
    out
}

/// Every `stackpin …` command in `text`, completed from this run's invocation (and the stack an
/// `--all` report is on).
pub fn complete(text: &str) -> String {
    if !text.contains("stackpin ") {
        return text.to_string();
    }
    let mut invocation = current();
    if let Some(manifest) = STACK.with(|s| s.borrow().clone()) {
        invocation.manifest = Some(manifest);
    }
    invocation.complete(text)
}

/// One `stackpin …` command built from its words, each quoted for a POSIX shell and completed
/// like every other hint (`--archive` when this run named one), in backticks: a path holding
/// spaces, quotes or `$(…)` is pasted back as the same one word, never run.
pub fn command(words: &[&str]) -> String {
    let line: Vec<String> = words
        .iter()
        .map(|w| {
            shlex::try_quote(w)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| w.to_string())
        })
        .collect();
    complete(&format!("`{}`", line.join(" ")))
}

/// Every `stackpin …` command in a JSON value's strings, completed as [`complete`] does.
pub fn complete_value(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.contains("stackpin ") => *text = complete(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(complete_value),
        serde_json::Value::Object(map) => map.values_mut().for_each(complete_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(manifest: &str) -> Invocation {
        Invocation {
            manifest: Some(manifest.into()),
            ..Invocation::default()
        }
    }

    #[test]
    fn the_manifest_placeholder_becomes_the_manifest_this_run_was_given() {
        let inv = run("stacks/my torch.yaml");
        assert_eq!(
            inv.complete("run `stackpin repair MANIFEST --yes` to reinstall"),
            "run `stackpin repair 'stacks/my torch.yaml' --yes` to reinstall"
        );
    }

    #[test]
    fn a_bare_command_that_needs_a_manifest_gets_one() {
        let inv = run("torch.yaml");
        assert_eq!(
            inv.complete("`stackpin fetch`"),
            "`stackpin fetch torch.yaml`"
        );
        assert_eq!(
            inv.complete("`stackpin audit`"),
            "`stackpin audit torch.yaml`"
        );
        // A command that names its stack set, or takes no manifest, is left as it is.
        assert_eq!(
            inv.complete("`stackpin audit --all`"),
            "`stackpin audit --all`"
        );
        assert_eq!(
            inv.complete("`stackpin data update`"),
            "`stackpin data update`"
        );
        assert_eq!(
            inv.complete("`stackpin install other.yaml`"),
            "`stackpin install other.yaml`"
        );
    }

    #[test]
    fn archive_and_gpu_follow_where_the_subcommand_takes_them() {
        let inv = Invocation {
            manifest: Some("t.yaml".into()),
            archive: Some("/srv/installers".into()),
            gpu: Some(1),
            up: false,
        };
        assert_eq!(
            inv.complete("`sudo stackpin repair MANIFEST --yes`"),
            "`sudo stackpin repair t.yaml --yes --archive /srv/installers --gpu 1`"
        );
        // fetch takes no --gpu; an --archive already given is not doubled.
        assert_eq!(
            inv.complete("`stackpin fetch MANIFEST --archive /x`"),
            "`stackpin fetch t.yaml --archive /x`"
        );
    }

    #[test]
    fn text_without_commands_and_unknown_commands_pass_through() {
        let inv = run("t.yaml");
        let text = "pip said `--index-url` was ignored; `stackpin frobnicate MANIFEST` stays";
        assert_eq!(inv.complete(text), text);
        assert_eq!(inv.complete("an odd ` backtick"), "an odd ` backtick");
    }

    #[test]
    fn inside_up_a_fetch_again_means_up_again() {
        let inv = Invocation {
            up: true,
            ..run("t.yaml")
        };
        assert_eq!(
            inv.complete("run `stackpin fetch` to fetch it again"),
            "run `stackpin up t.yaml` to fetch it again"
        );
    }

    #[test]
    fn flag_values_are_not_mistaken_for_a_manifest() {
        let inv = run("t.yaml");
        assert_eq!(
            inv.complete("`stackpin install --force library`"),
            "`stackpin install t.yaml --force library`"
        );
        assert_eq!(
            inv.complete("`stackpin prove --batch 32`"),
            "`stackpin prove t.yaml --batch 32`"
        );
    }
}
