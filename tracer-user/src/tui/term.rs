//! The real terminal: raw mode + alternate screen + mouse, restored on drop, on panic
//! (hook) and when SIGTERM/SIGINT/SIGHUP end the app loop; and its input ([`TermInput`]:
//! the input thread and those signals). Tests run the same loop on a fake terminal instead
//! (`tui/fake.rs`).

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::signal::unix::Signal;
use tokio::sync::mpsc;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Leaves raw mode and the alternate screen. Idempotent; errors ignored (best effort).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
}

static HOOK: Once = Once::new();

/// Restores the terminal before the default panic message is printed.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
    });
}

/// The terminal, set up; restored when dropped.
pub struct Guard {
    pub term: Term,
}

impl Guard {
    pub fn enter() -> io::Result<Guard> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture, cursor::Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(mut term) => {
                let _ = term.clear();
                Ok(Guard { term })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// The real terminal's input: its events, read on their own thread (crossterm's reader
/// blocks), and the signals that stop the viewer (SIGTERM, SIGINT, SIGHUP), which end it as
/// a closed input does.
pub struct TermInput {
    rx: mpsc::Receiver<TermEvent>,
    stop: Arc<AtomicBool>,
    signals: [Signal; 3],
}

impl TermInput {
    /// Watches the signals, then starts the reading thread (after raw mode is on: the
    /// [`Guard`] is entered first).
    pub fn start() -> io::Result<TermInput> {
        use tokio::signal::unix::{signal, SignalKind};
        let signals = [
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
        ];
        let (tx, rx) = mpsc::channel(256);
        let stop = Arc::new(AtomicBool::new(false));
        // Not joined: after a hangup crossterm's reader can spin on EOF and never return; the
        // thread ends with the process.
        drop(spawn_input(tx, stop.clone()));
        Ok(TermInput { rx, stop, signals })
    }
}

impl super::app::UserInput for TermInput {
    async fn next(&mut self) -> Option<TermEvent> {
        let [term, int, hup] = &mut self.signals;
        tokio::select! {
            biased;
            _ = term.recv() => None,
            _ = int.recv() => None,
            _ = hup.recv() => None,
            ev = self.rx.recv() => ev,
        }
    }
}

impl Drop for TermInput {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads terminal input on its own thread and forwards it. Stops within 50 ms once `stop`
/// is set or the receiver is gone.
fn spawn_input(tx: mpsc::Sender<TermEvent>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match crossterm::event::poll(Duration::from_millis(50)) {
                Ok(true) => match crossterm::event::read() {
                    Ok(ev) => {
                        if tx.blocking_send(ev).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                },
                Ok(false) => {}
                Err(_) => break,
            }
        }
    })
}
