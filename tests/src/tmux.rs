//! A detached tmux session of fixed size on a private server: how tests drive the viewer in
//! a real terminal (keys sent, the pane captured).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a wait may take before the test fails: generous, so a loaded machine is slow,
/// not wrong; every wait ends as soon as its condition holds.
pub const CEILING: Duration = Duration::from_secs(60);

/// A private tmux server (its own socket), killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-u")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux")
    }

    pub fn start(name: &str, cols: u16, rows: u16) -> Tmux {
        let t = Tmux {
            socket: format!("tracer-tui-{name}-{}", std::process::id()),
        };
        let o = t.cmd(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
            "TERM=xterm-256color",
            "LANG=C.UTF-8",
            "HOME=/tmp",
            "PS1=$ ",
            "bash",
            "--norc",
            "--noprofile",
        ]);
        assert!(o.status.success(), "tmux new-session: {o:?}");
        t
    }

    pub fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }

    /// Literal text (no key-name lookup).
    pub fn type_text(&self, text: &str) {
        assert!(self
            .cmd(&["send-keys", "-t", "t", "-l", text])
            .status
            .success());
    }

    pub fn capture(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    pub fn display(&self, fmt: &str) -> String {
        String::from_utf8_lossy(&self.cmd(&["display-message", "-p", "-t", "t", fmt]).stdout)
            .trim()
            .to_string()
    }

    /// Waits until the pane shows every needle; returns the last capture.
    pub fn wait_for(&self, needles: &[&str]) -> String {
        let deadline = Instant::now() + CEILING;
        loop {
            let screen = self.capture();
            if needles.iter().all(|n| screen.contains(n)) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {needles:?}; pane:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn wait_until(&self, what: &str, f: impl Fn(&Tmux) -> bool) {
        let deadline = Instant::now() + CEILING;
        while !f(self) {
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; pane:\n{}", self.capture());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts `tracer view SOURCE` (SOURCE and options, shell words) from the pane's shell and
    /// returns its pid once the pane `shows` every needle.
    pub fn start_viewer(&self, bin: &Path, source: &str, shows: &[&str], pidfile: &Path) -> String {
        self.send(&["C-l"]);
        self.type_text(&format!(
            "bash -c 'echo $$ > {}; exec {} view {source}'",
            pidfile.display(),
            bin.display(),
        ));
        self.send(&["Enter"]);
        self.wait_for(shows);
        let pid = std::fs::read_to_string(pidfile).expect("pid file");
        let _ = std::fs::remove_file(pidfile);
        pid
    }

    /// The shell is back: not in the alternate screen, running bash, line discipline sane.
    pub fn assert_terminal_usable(&self, marker: &str) {
        self.wait_until("the alternate screen to be left", |t| {
            t.display("#{alternate_on}") == "0"
        });
        self.wait_until("bash in the foreground", |t| {
            t.display("#{pane_current_command}") == "bash"
        });
        self.type_text(&format!("stty -a | grep -o -- '-*icanon' ; echo {marker}"));
        self.send(&["Enter"]);
        let screen = self.wait_for(&[&format!("\n{marker}")]);
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        assert!(
            lines.contains(&"icanon") && !lines.contains(&"-icanon"),
            "terminal left in raw mode:\n{screen}"
        );
        assert!(lines.contains(&marker), "echo did not run:\n{screen}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}
