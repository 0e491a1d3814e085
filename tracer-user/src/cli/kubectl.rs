//! `kubectl tracer`: the binary run under the name `kubectl-tracer` (the node package's link),
//! which kubectl finds on the PATH as a plugin and runs with the rest of its arguments
//! (`kubectl tracer story --pod NAME -n NS` runs `kubectl-tracer story --pod NAME -n NS`).
//! The commands are `tracer`'s; only the NATS servers may come from elsewhere: `--nats URL`
//! anywhere before `--`, else the environment's [`ENV_NATS`]. A command that needs a recording
//! and was given none reads `URL/*` (every node: with `--pod` or `-n`, as kubectl's habits
//! go), or `URL` for those that take the servers themselves ([`SERVER_ONLY`]).

use clap::{CommandFactory, FromArgMatches};
use std::ffi::{OsStr, OsString};

use super::Cli;

/// The name kubectl looks for on the PATH for `kubectl tracer`.
pub const PLUGIN_NAME: &str = "kubectl-tracer";

/// Environment variable with the NATS servers (`nats://HOST:PORT`, or a list
/// `nats://A:4222,nats://B:4222`) when `--nats` is not given.
pub const ENV_NATS: &str = "TRACER_NATS";

/// Commands whose recording argument is the servers themselves, not a node's stream.
const SERVER_ONLY: &[&str] = &["nodes"];

/// Whether the binary was run as `kubectl-tracer` (its argv[0]).
pub fn is_plugin(argv0: &OsStr) -> bool {
    std::path::Path::new(argv0).file_name() == Some(OsStr::new(PLUGIN_NAME))
}

/// `args` (argv[0] first) parsed as `kubectl tracer` runs them, `env` being [`ENV_NATS`]'s value.
pub fn parse(args: Vec<OsString>, env: Option<OsString>) -> Result<Cli, clap::Error> {
    let (args, flag) = take_servers(args);
    let servers = flag.or(env).filter(|s| !s.is_empty());
    match parse_from(&args) {
        Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {
            let Some(with) = servers.and_then(|s| with_servers(&args, &s)) else {
                tracer::say!(
                    "kubectl tracer: name a recording, or the NATS servers with --nats URL or {ENV_NATS}"
                );
                return Err(e);
            };
            parse_from(&with)
        }
        r => r,
    }
}

fn parse_from(args: &[OsString]) -> Result<Cli, clap::Error> {
    let matches = Cli::command()
        .bin_name("kubectl tracer")
        .try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

/// The subcommand's position: the first argument after argv[0] that is no option.
fn subcommand_at(args: &[OsString]) -> Option<usize> {
    (1..args.len()).find(|&i| !args[i].as_encoded_bytes().starts_with(b"-"))
}

/// `args` without `--nats URL` / `--nats=URL` (before `--`; the last one given wins), and
/// that URL. `tracer agent`'s own `--nats` is left alone.
fn take_servers(args: Vec<OsString>) -> (Vec<OsString>, Option<OsString>) {
    let agent = subcommand_at(&args).is_some_and(|i| args[i] == "agent");
    let mut out = Vec::with_capacity(args.len());
    let mut servers = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if agent || a == "--" {
            out.push(a);
            out.extend(it.by_ref());
            break;
        }
        if a == "--nats" {
            match it.next() {
                Some(v) => servers = Some(v),
                // Left for clap to say what is wrong.
                None => out.push(a),
            }
        } else if let Some(v) = a.as_encoded_bytes().strip_prefix(b"--nats=") {
            // SAFETY: the bytes after an ASCII prefix of an OsStr's encoded bytes are still
            // valid encoded bytes (the prefix ends on a boundary), from the same platform.
            servers = Some(unsafe { OsStr::from_encoded_bytes_unchecked(v) }.to_os_string());
        } else {
            out.push(a);
        }
    }
    (out, servers)
}

/// `args` with the recording `servers` name put after the subcommand: `SERVERS/*`, or the
/// servers alone for [`SERVER_ONLY`] commands. None without a subcommand.
fn with_servers(args: &[OsString], servers: &OsStr) -> Option<Vec<OsString>> {
    let at = subcommand_at(args)?;
    let servers = servers.to_string_lossy();
    let servers = servers.trim_end_matches('/');
    let url = match SERVER_ONLY.iter().any(|c| args[at] == *c) {
        true => servers.to_string(),
        false => format!("{servers}/*"),
    };
    let mut with = args.to_vec();
    with.insert(at + 1, url.into());
    Some(with)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_plugin_is_known_by_its_name() {
        assert!(is_plugin(OsStr::new("/usr/bin/kubectl-tracer")));
        assert!(is_plugin(OsStr::new("kubectl-tracer")));
        assert!(!is_plugin(OsStr::new("/usr/bin/tracer")));
        assert!(!is_plugin(OsStr::new("kubectl-tracer2")));
    }

    #[test]
    fn the_servers_come_from_the_flag_else_the_environment() {
        let (args, s) = take_servers(os(&["k", "--nats", "nats://a:1", "story", "--pod", "p"]));
        assert_eq!(args, os(&["k", "story", "--pod", "p"]));
        assert_eq!(s.as_deref(), Some(OsStr::new("nats://a:1")));
        let (args, s) = take_servers(os(&["k", "story", "--nats=nats://b:2", "--", "--nats"]));
        assert_eq!(args, os(&["k", "story", "--", "--nats"]));
        assert_eq!(s.as_deref(), Some(OsStr::new("nats://b:2")));
        let agent = os(&["k", "agent", "--nats", "nats://a:1", "--node", "n"]);
        assert_eq!(take_servers(agent.clone()), (agent, None));

        let env = Some(OsString::from("nats://env:1"));
        let flag = parse(
            os(&["k", "tree", "--nats", "nats://a:1,b:2", "-n", "ns"]),
            env.clone(),
        );
        let Some(super::super::Command::Tree { file, .. }) = flag.expect("parsed").command else {
            panic!("not tree");
        };
        assert_eq!(file, std::path::Path::new("nats://a:1,b:2/*"));
        let from_env = parse(os(&["k", "story", "--pod", "p", "-n", "ns"]), env.clone());
        let Some(super::super::Command::Story { file, pod, .. }) =
            from_env.expect("parsed").command
        else {
            panic!("not story");
        };
        assert_eq!(file, std::path::Path::new("nats://env:1/*"));
        assert_eq!(pod.namespace.as_deref(), Some("ns"));
        // A recording given is read as it is.
        let given = parse(os(&["k", "tree", "nats://h:1/n1"]), env).expect("parsed");
        let Some(super::super::Command::Tree { file, .. }) = given.command else {
            panic!("not tree");
        };
        assert_eq!(file, std::path::Path::new("nats://h:1/n1"));
        assert!(parse(os(&["k", "tree"]), None).is_err());
    }

    #[test]
    fn server_only_commands_take_the_servers_alone() {
        let with = with_servers(
            &os(&["k", "nodes", "--format", "json"]),
            OsStr::new("nats://a:1/"),
        );
        assert_eq!(
            with,
            Some(os(&["k", "nodes", "nats://a:1", "--format", "json"]))
        );
        assert_eq!(
            with_servers(&os(&["k", "--help"]), OsStr::new("nats://a:1")),
            None
        );
    }
}
