//! The `stackpin` binary: everything lives in the library; this only hands over the exit code,
//! and runs as the guard of an installer when started as one (`exec::guard`).

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args
        .first()
        .is_some_and(|a| a == stackpin::exec::guard::GUARD_ARG)
    {
        std::process::exit(stackpin::exec::guard::main(&args[1..]));
    }
    if let Ok(exe) = std::env::current_exe() {
        stackpin::exec::guard::enable(exe);
    }
    stackpin::cli::main()
}
