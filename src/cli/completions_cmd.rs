//! `stackpin completions SHELL` and `stackpin man`: shell completion scripts (clap_complete)
//! and a roff man page (clap_mangen), both generated from the same clap definitions as `--help`,
//! so they never drift from the real flags. Where to install them is the user's (and README's).

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, CmdResult, Exit, Failure};

pub const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  stackpin completions bash > ~/.local/share/bash-completion/completions/stackpin
  stackpin completions zsh > ~/.zfunc/_stackpin      # with fpath+=(~/.zfunc) before compinit
  stackpin completions fish > ~/.config/fish/completions/stackpin.fish
  stackpin completions powershell >> $PROFILE";

pub const MAN_EXAMPLES: &str = "\
Examples:
  stackpin man | man -l -
  stackpin man install | man -l -
  sudo sh -c 'stackpin man > /usr/local/share/man/man1/stackpin.1'";

/// Errors of generating completions or a man page.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("`stackpin man {name}`: no such command; pages exist for {known}")]
    UnknownCommand { name: String, known: String },
    #[error("writing the {what} to stdout")]
    Write {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl crate::exit::ExitStatus for GenerateError {
    fn exit(&self) -> Exit {
        match self {
            GenerateError::UnknownCommand { .. } => Exit::Input,
            GenerateError::Write { .. } => Exit::External,
        }
    }
}

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// A command's own page, stackpin-COMMAND(1), as the main page's list names them.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

pub fn run_completions(args: &CompletionsArgs) -> CmdResult {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "stackpin", &mut out);
    write_stdout(&out, "completion script")
}

pub fn run_man(args: &ManArgs) -> CmdResult {
    let top = Cli::command();
    let page = match &args.command {
        None => top,
        Some(name) => {
            let Some(sub) = top.find_subcommand(name) else {
                let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
                return Err(Failure::from(GenerateError::UnknownCommand {
                    name: name.clone(),
                    known: names.join(", "),
                }));
            };
            // The name clap_mangen prints in the title and synopsis: `stackpin-install`.
            let title = format!("stackpin-{}", sub.get_name());
            sub.clone().name(title)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|source| {
            Failure::from(GenerateError::Write {
                what: "man page",
                source,
            })
        })?;
    write_stdout(&out, "man page")
}

fn write_stdout(bytes: &[u8], what: &'static str) -> CmdResult {
    match std::io::stdout().lock().write_all(bytes) {
        Ok(()) => Ok(Exit::Ok),
        // `stackpin man | head` closes the pipe early; that is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        Err(source) => Err(GenerateError::Write { what, source }.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_page_names_every_subcommand() {
        let mut out = Vec::new();
        clap_mangen::Man::new(Cli::command())
            .render(&mut out)
            .expect("render");
        let page = String::from_utf8(out).expect("utf-8");
        assert!(
            page.starts_with(".ie") || page.contains(".TH stackpin"),
            "{page}"
        );
        for sub in ["install", "prove", "completions", "man"] {
            assert!(page.contains(sub), "man page lacks {sub}");
        }
    }
}
