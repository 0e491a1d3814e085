//! The real terminal: raw mode + alternate screen + mouse, restored on drop, on panic
//! (hook) and by the app loop on SIGTERM/SIGINT; and the input thread.

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

/// Reads terminal input on its own thread (crossterm's reader blocks) and forwards it.
/// Stops within 50 ms once `stop` is set or the receiver is gone.
pub fn spawn_input(
    tx: mpsc::Sender<TermEvent>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
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
