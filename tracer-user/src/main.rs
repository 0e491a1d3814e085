//! The `tracer` command line. Thin: every subcommand is a call into the library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    let args = match cli::parse() {
        Ok(args) => args,
        Err(e) => return cli::parse_error(e),
    };
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            // One line, no backtrace: the error chain joined.
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            tracer::say!("tracer: {}", chain.join(": "));
            ExitCode::from(cli::exit_code_for(&e))
        }
    }
}
