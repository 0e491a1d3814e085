//! The whole-app test kit: a fake terminal (ratatui's `TestBackend`, whose screen a test can
//! read while the app runs) and a script of what the user does ([`Keys`]), for the same
//! [`app_loop`](super::app::app_loop) the real terminal runs (bandwhich's model: every input
//! of the app behind an interface, faked in tests).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::Terminal;

use super::app::UserInput;

/// How long a [`Step::Shows`] waits for the screen before it fails the test (a loaded
/// machine is slow; a right app is there in milliseconds).
const PATIENCE: Duration = Duration::from_secs(30);

/// What the fake terminal shows, shared with the test and its [`Keys`].
#[derive(Debug)]
struct Seen {
    /// The last frame, as plain text (`shot::plain_text`).
    screen: String,
    /// The terminal's size now (a [`Step::Resize`] changes it).
    size: Size,
    /// The last frame's size.
    drawn: Size,
}

/// The screen of a [`FakeBackend`], readable while the app runs.
#[derive(Clone, Debug)]
pub struct Screen(Arc<Mutex<Seen>>);

impl Screen {
    /// The last frame drawn, as plain text.
    pub fn text(&self) -> String {
        self.lock().screen.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// ratatui's `TestBackend` that publishes each frame it is flushed to a [`Screen`], and
/// takes a new size from it (a resize the script made).
pub struct FakeBackend {
    inner: TestBackend,
    screen: Screen,
}

/// A fake terminal of `cols`×`rows`, and its screen.
pub fn terminal(cols: u16, rows: u16) -> (Terminal<FakeBackend>, Screen) {
    let screen = Screen(Arc::new(Mutex::new(Seen {
        screen: String::new(),
        size: Size::new(cols, rows),
        drawn: Size::default(),
    })));
    let backend = FakeBackend {
        inner: TestBackend::new(cols, rows),
        screen: screen.clone(),
    };
    // TestBackend cannot fail.
    let Ok(term) = Terminal::new(backend);
    (term, screen)
}

impl FakeBackend {
    /// The buffer at the size the script set.
    fn sized(&mut self) -> &mut TestBackend {
        let want = self.screen.lock().size;
        if self.inner.buffer().area.as_size() != want {
            self.inner.resize(want.width, want.height);
        }
        &mut self.inner
    }
}

impl Backend for FakeBackend {
    type Error = std::convert::Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.sized().draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.sized().clear()
    }
    fn clear_region(&mut self, t: ClearType) -> Result<(), Self::Error> {
        self.sized().clear_region(t)
    }
    fn size(&self) -> Result<Size, Self::Error> {
        Ok(self.screen.lock().size)
    }
    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.sized().window_size()
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        let text = super::shot::plain_text(self.inner.buffer());
        let mut seen = self.screen.lock();
        seen.screen = text;
        seen.drawn = self.inner.buffer().area.as_size();
        Ok(())
    }
}

/// One thing the scripted user does.
#[derive(Clone, Debug)]
pub enum Step {
    /// Presses a key.
    Key(KeyCode),
    /// Types each character of the text.
    Type(String),
    /// Resizes the terminal.
    Resize(u16, u16),
    /// Waits until a frame of this size (columns, rows) is drawn.
    Drawn(u16, u16),
    /// Waits until the screen shows this text (the test fails after [`PATIENCE`], showing the
    /// screen).
    Shows(String),
    /// Waits until the screen does not show this text.
    Hides(String),
    /// Fails the test if the screen shows this text now.
    Lacks(String),
    /// Sets a cue a [`Script`](crate::source::Script) waits for
    /// ([`Scripted::Until`](crate::source::Scripted::Until)): the user did what comes first.
    Cue(Arc<std::sync::atomic::AtomicBool>),
    /// Waits until the test sets this flag (it looked at what it must first).
    Until(Arc<std::sync::atomic::AtomicBool>),
}

/// The scripted user: its steps in order; done, it waits forever (so only a quit key, never
/// the script's end, ends the app).
pub struct Keys {
    steps: std::collections::VecDeque<Step>,
    screen: Screen,
    /// When the step waiting now began to wait (kept across the loop's cancellations).
    since: Option<Instant>,
}

impl Keys {
    /// `steps` on the terminal whose screen is `screen`.
    pub fn new(screen: &Screen, steps: impl IntoIterator<Item = Step>) -> Keys {
        Keys {
            steps: steps.into_iter().collect(),
            screen: screen.clone(),
            since: None,
        }
    }

    /// Steps not taken yet.
    pub fn left(&self) -> usize {
        self.steps.len()
    }

    /// Until the screen is `done`; else fails the test after [`PATIENCE`], saying it never
    /// was `what`.
    async fn wait(&mut self, what: &str, done: impl Fn(&Seen) -> bool) {
        let end = *self.since.get_or_insert_with(Instant::now) + PATIENCE;
        while !done(&self.screen.lock()) {
            if Instant::now() > end {
                let screen = self.screen.text();
                panic!("the screen never {what}; it shows:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.since = None;
        self.steps.pop_front();
    }
}

fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

impl UserInput for Keys {
    // Cancel-safe: a step is taken off only when its event is returned (a wait dropped
    // half-way starts again).
    async fn next(&mut self) -> Option<TermEvent> {
        loop {
            let Some(step) = self.steps.front_mut() else {
                return std::future::pending().await;
            };
            let ev = match step {
                Step::Key(code) => key(*code),
                Step::Type(text) if text.is_empty() => {
                    self.steps.pop_front();
                    continue;
                }
                Step::Type(text) => return Some(key(KeyCode::Char(text.remove(0)))),
                Step::Resize(w, h) => {
                    self.screen.lock().size = Size::new(*w, *h);
                    TermEvent::Resize(*w, *h)
                }
                Step::Lacks(t) => {
                    let screen = self.screen.text();
                    assert!(!screen.contains(t.as_str()), "{t:?} is shown:\n{screen}");
                    self.steps.pop_front();
                    continue;
                }
                Step::Cue(cue) => {
                    cue.store(true, std::sync::atomic::Ordering::SeqCst);
                    self.steps.pop_front();
                    continue;
                }
                Step::Shows(t) => {
                    let t = t.clone();
                    let what = format!("showed {t:?}");
                    self.wait(&what, |s| s.screen.contains(&t)).await;
                    continue;
                }
                Step::Hides(t) => {
                    let t = t.clone();
                    let what = format!("hid {t:?}");
                    self.wait(&what, |s| !s.screen.contains(&t)).await;
                    continue;
                }
                Step::Until(flag) => {
                    let flag = flag.clone();
                    let set = move |_: &Seen| flag.load(std::sync::atomic::Ordering::SeqCst);
                    self.wait("was let go on by the test", set).await;
                    continue;
                }
                &mut Step::Drawn(w, h) => {
                    let what = format!("was drawn at {w}x{h}");
                    self.wait(&what, |s| s.drawn == Size::new(w, h)).await;
                    continue;
                }
            };
            self.steps.pop_front();
            return Some(ev);
        }
    }
}

/// A recorder that keeps what it is given: the events, and the drop count it is finished with.
#[derive(Clone, Default)]
pub struct Kept(pub Arc<Mutex<(Vec<crate::event::Event>, Option<u64>)>>);

impl super::Recorder for Kept {
    fn record(&mut self, batch: &[crate::event::Event]) -> std::io::Result<()> {
        self.0.lock().unwrap().0.extend_from_slice(batch);
        Ok(())
    }
    fn finish(&mut self, c: crate::source::Counters) -> std::io::Result<()> {
        self.0.lock().unwrap().1 = Some(c.drops);
        Ok(())
    }
}
