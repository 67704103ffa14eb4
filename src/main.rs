//! The `stackpin` binary: everything lives in the library; this only hands over the exit code.

fn main() -> std::process::ExitCode {
    stackpin::cli::main()
}
