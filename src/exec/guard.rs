//! The guard: a small stackpin process between stackpin and a long-running child (an
//! installer, the example), so that the child's tree ends when stackpin ends, however it ends.
//!
//! A Ctrl-C, a timeout or SIGTERM reach the child's tree through [`super::Running`]; a
//! `kill -9` of stackpin, a crash or a power-cut ssh session leave no one to do that, and an
//! NVIDIA runfile would go on installing a driver that no stackpin watches while the next
//! `install` starts a second one. The guard learns that stackpin is gone when its stdin (a pipe
//! only stackpin holds open) reaches its end, and then ends the child's tree: on Unix its whole
//! process group (the group stackpin made for the guard, which the child shares), on Windows
//! the child's Job Object. It needs no `unsafe` and no platform's parent-death signal.
//!
//! The guard is the stackpin binary itself, started as `stackpin __stackpin-guard -- PROGRAM
//! ARGS…`; the binary enables it with [`enable`] at start-up and hands that argument to
//! [`main`]. Library tests, whose executable is a test harness, never enable it.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The first argument that makes the stackpin binary a guard.
pub const GUARD_ARG: &str = "__stackpin-guard";

/// How often the guard looks at its child and at the lifeline.
const POLL: Duration = Duration::from_millis(20);

static GUARD_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Lets [`super::start`] put a guard between stackpin and its guarded children: `exe` is the
/// stackpin binary (`std::env::current_exe()`).
pub fn enable(exe: PathBuf) {
    let _ = GUARD_EXE.set(exe);
}

/// The guard's argv for `program args…`, when the guard is enabled and the program can be
/// found (a program that cannot be found is started unguarded, so its error stays the
/// runner's own "cannot start").
pub(super) fn wrap(program: &OsStr, args: &[OsString]) -> Option<(PathBuf, Vec<OsString>)> {
    let exe = GUARD_EXE.get()?;
    which::which(program).ok()?;
    let mut argv = vec![OsString::from(GUARD_ARG), OsString::from("--")];
    argv.push(program.to_owned());
    argv.extend(args.iter().cloned());
    Some((exe.clone(), argv))
}

/// Runs as the guard: `args` are what follows [`GUARD_ARG`] (`-- PROGRAM ARGS…`). Returns the
/// child's exit code; a child ended by a signal ends the guard by the same signal where it can.
pub fn main(args: &[OsString]) -> i32 {
    let args = match args.first() {
        Some(first) if first == "--" => &args[1..],
        _ => args,
    };
    let Some((program, rest)) = args.split_first() else {
        say("no program to run");
        return 2;
    };
    let mut command = Command::new(program);
    command.args(rest).stdin(Stdio::null());
    let mut child = match Tree::spawn(command) {
        Ok(child) => child,
        Err(e) => {
            say(&format!(
                "cannot start `{}`: {e}",
                program.to_string_lossy()
            ));
            return 127;
        }
    };
    let gone = watch_lifeline();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return exit_code(status),
            Ok(None) => {}
            Err(e) => {
                child.end();
                say(&format!("waiting for the child failed: {e}"));
                return 1;
            }
        }
        if gone.load(Ordering::SeqCst) {
            child.end();
            // Said after the end, and never with eprintln!: stackpin read our stderr, and with
            // stackpin gone a write there fails (EPIPE), which must not stop the guard.
            say(&format!(
                "stackpin ended while `{}` ran; it was ended with its children",
                program.to_string_lossy()
            ));
            return 1;
        }
        std::thread::sleep(POLL);
    }
}

/// One line on stderr, or nothing when no one reads it any more.
fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "stackpin guard: {text}");
}

/// Reads stdin to its end on a thread of its own; the flag is set when stackpin is gone.
fn watch_lifeline() -> Arc<AtomicBool> {
    let gone = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&gone);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 64];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        flag.store(true, Ordering::SeqCst);
    });
    gone
}

/// The guarded child and the way its whole tree is ended.
struct Tree {
    child: Box<dyn process_wrap::std::ChildWrapper>,
}

impl Tree {
    /// Unix: the child stays in the guard's process group (the one stackpin made), so that a
    /// timeout or a second Ctrl-C in stackpin reaches it too. Windows: a Job Object of its own
    /// inside stackpin's, which ends it with everything it started.
    fn spawn(command: Command) -> std::io::Result<Tree> {
        #[allow(unused_mut)]
        let mut wrap = process_wrap::std::CommandWrap::from(command);
        #[cfg(windows)]
        wrap.wrap(process_wrap::std::JobObject);
        Ok(Tree {
            child: wrap.spawn()?,
        })
    }

    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }

    #[cfg(unix)]
    fn end(&mut self) {
        // The guard is the group's leader: this ends the child, its children and the guard.
        let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), nix::sys::signal::SIGKILL);
        let _ = self.child.start_kill();
    }

    #[cfg(not(unix))]
    fn end(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait();
    }
}

#[cfg(unix)]
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => {
            // The same end for stackpin as without a guard: killed by that signal.
            if let Ok(sig) = nix::sys::signal::Signal::try_from(signal) {
                let _ = nix::sys::signal::raise(sig);
            }
            128 + signal
        }
        (None, None) => 1,
    }
}

#[cfg(not(unix))]
fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or(1)
}
