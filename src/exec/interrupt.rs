//! Ctrl-C: the first press asks the command to stop after the running child (which finishes);
//! the second ends the child's whole tree at once. Signals are process-wide, so the count is too.
//!
//! The children run in trees of their own and never see the terminal's Ctrl-C; only stackpin
//! does, through the handler installed by [`on_ctrl_c`].
//!
//! SIGTERM (a service manager, `kill`) and SIGHUP (the ssh session that dropped) count as the
//! second press at once: no one is left at the terminal to wait for, so the running child's
//! tree is ended now and the chain records where it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

static PRESSES: AtomicU32 = AtomicU32::new(0);

/// True once Ctrl-C was pressed twice: the running child's tree is to be ended now.
pub fn stop_requested() -> bool {
    PRESSES.load(Ordering::SeqCst) >= 2
}

/// Installs the Ctrl-C handler (once per process; a second call keeps the first handler and
/// still returns a flag that the first press sets). `waiting` is what the first press prints,
/// e.g. "waiting for the running installer to finish, then stopping".
pub fn on_ctrl_c(waiting: &'static str) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    FLAGS.with_flag(Arc::clone(&flag));
    // A second registration fails harmlessly: the first handler sets every registered flag.
    if ctrlc::set_handler(move || press(waiting)).is_ok() {
        on_termination();
    }
    flag
}

/// SIGTERM and SIGHUP, read on a thread of their own: each ends the running child's tree.
#[cfg(unix)]
fn on_termination() {
    use signal_hook::consts::{SIGHUP, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let name = if signal == SIGHUP {
                "SIGHUP"
            } else {
                "SIGTERM"
            };
            terminate(name);
        }
    });
}

#[cfg(not(unix))]
fn on_termination() {}

/// A termination signal: every flag is set and the running child's tree is ended at once.
#[cfg(unix)]
fn terminate(signal: &str) {
    FLAGS.set_all();
    if PRESSES.swap(2, Ordering::SeqCst) < 2 {
        eprintln!("\n{signal} received: stopping the running process and its children");
    }
}

/// Flags of later [`on_ctrl_c`] calls (`up` runs fetch, install and prove in one process).
struct Flags(std::sync::Mutex<Vec<Arc<AtomicBool>>>);

impl Flags {
    fn with_flag(&self, flag: Arc<AtomicBool>) {
        if let Ok(mut flags) = self.0.lock() {
            flags.push(flag);
        }
    }

    fn set_all(&self) {
        if let Ok(flags) = self.0.lock() {
            for flag in flags.iter() {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }
}

static FLAGS: Flags = Flags(std::sync::Mutex::new(Vec::new()));

fn press(waiting: &str) {
    FLAGS.set_all();
    match PRESSES.fetch_add(1, Ordering::SeqCst) {
        0 => eprintln!("\ninterrupted: {waiting}; press Ctrl-C again to stop it now"),
        1 => eprintln!("\ninterrupted again: stopping the running process and its children"),
        _ => {}
    }
}
