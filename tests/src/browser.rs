//! A real browser for the tests: Debian's `chromium`, headless, driven through the Chrome
//! DevTools Protocol on its pipe transport (`--remote-debugging-pipe`: JSON messages, each
//! ended by a NUL byte, read from the browser's file descriptor 3 and written to its 4, the
//! transport Playwright uses). No port to find or race for, and no websocket: the protocol's
//! own framing over two pipes, which `sh` hands the browser as its descriptors 3 and 4.
//!
//! Input goes through `Input.dispatchMouseEvent`, `Input.insertText` and
//! `Input.dispatchKeyEvent`: the page gets the same events as from a user.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// How long one protocol call may take before the test fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The browser's executable: `chromium` (Debian's package) or `chromium-browser` on `PATH`.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether a missing browser fails the tests instead of skipping them: as for the JDKs, in CI
/// (`CI=true`) or with `JFRNATIVE_REQUIRE_JDKS=1` (which the test command, `tools/scripts/test.sh`,
/// sets).
pub fn browser_required() -> bool {
    crate::jdk::jdks_required()
}

/// A headless Chromium with one page (one tab), closed when dropped.
pub struct Browser {
    child: Child,
    to_browser: ChildStdin,
    from_browser: Receiver<Value>,
    session: String,
    next_id: u64,
    events: Vec<Value>,
    profile_dir: PathBuf,
}

impl Browser {
    /// Starts Chromium with a page of `width` × `height` CSS pixels; `None` (said on stderr)
    /// when it is not installed and not required.
    pub fn launch(width: u32, height: u32) -> Option<Browser> {
        let Some(exe) = chromium() else {
            assert!(
                !browser_required(),
                "chromium not found (run tools/scripts/setup.sh); it is required in CI"
            );
            eprintln!("note: chromium not found: the browser checks are skipped");
            return None;
        };
        // One directory per browser: tests of one process run side by side, and a name shared
        // by two (the same width) let one's clean-up delete the other's directory as it started.
        static LAUNCHED: AtomicUsize = AtomicUsize::new(0);
        let profile_dir = std::env::temp_dir().join(format!(
            "jfrnative-chromium-{}-{}-{}",
            std::process::id(),
            width,
            LAUNCHED.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile_dir);
        std::fs::create_dir_all(&profile_dir).unwrap();
        let log = std::fs::File::create(profile_dir.join("stderr.log")).unwrap();
        // The pipe transport reads descriptor 3 and writes 4: the shell moves our stdin and
        // stdout pipes there, then gives the browser /dev/null and its log as 0 and 1.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>&2"#)
            .arg(&exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--remote-debugging-pipe",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                "--force-color-profile=srgb",
                "--font-render-hinting=none",
            ])
            .arg(format!("--user-data-dir={}", profile_dir.display()))
            .arg(format!("--window-size={width},{height}"))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
        let to_browser = child.stdin.take().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let (send, from_browser) = mpsc::channel();
        std::thread::spawn(move || {
            let mut message = Vec::new();
            loop {
                message.clear();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if message.last() == Some(&0) {
                    message.pop();
                }
                let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                    continue;
                };
                if send.send(value).is_err() {
                    return;
                }
            }
        });
        let mut browser = Browser {
            child,
            to_browser,
            from_browser,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            profile_dir,
        };
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}));
        }
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        Some(browser)
    }

    /// Sends one command (to the page once attached) and returns its result; panics on a
    /// protocol error or after two minutes. Events that arrive meanwhile are kept.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("{method}: the browser is gone: {e}"));
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("{method}: no answer from the browser: {e}"));
            if reply["id"].as_u64() == Some(id) {
                if let Some(error) = reply.get("error") {
                    panic!("{method}: {error}");
                }
                return reply["result"].clone();
            }
            self.events.push(reply);
        }
    }

    /// Waits for the event `method` of the page (one already received counts), for at most
    /// `timeout`.
    fn wait_event(&mut self, method: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(at) = self.events.iter().position(|e| e["method"] == method) {
                return self.events.remove(at);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("waiting for {method}: {e}"));
            self.events.push(event);
        }
    }

    /// Opens `file` and waits for its load event. What the previous page did is forgotten.
    pub fn open(&mut self, file: &Path) {
        while let Ok(event) = self.from_browser.try_recv() {
            self.events.push(event);
        }
        self.events.clear();
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        let result = self.call("Page.navigate", json!({ "url": url }));
        assert!(result.get("errorText").is_none(), "{url}: {result}");
        self.wait_event("Page.loadEventFired", CALL_TIMEOUT);
    }

    /// The value of the JavaScript expression `expression` (promises awaited); panics with the
    /// exception it threw.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(e) = result.get("exceptionDetails") {
            panic!("{expression}: {e}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true, for at most `timeout`.
    pub fn wait_until(&mut self, expression: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.eval(expression) != json!(true) {
            assert!(Instant::now() < deadline, "still not true: {expression}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn mouse(&mut self, kind: &str, x: f64, y: f64, clicks: u32) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": if kind == "mouseMoved" { "none" } else { "left" }, "clickCount": clicks }),
        );
    }

    /// Moves the mouse to (`x`, `y`) (viewport CSS pixels).
    pub fn hover(&mut self, x: f64, y: f64) {
        self.mouse("mouseMoved", x, y, 0);
    }

    /// Clicks the left button at (`x`, `y`).
    pub fn click(&mut self, x: f64, y: f64) {
        self.hover(x, y);
        self.mouse("mousePressed", x, y, 1);
        self.mouse("mouseReleased", x, y, 1);
    }

    /// Types `text` into the focused element, as an input method commits it.
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({ "text": text }));
    }

    /// Presses and releases a key named as `KeyboardEvent.key` names it (`Escape`).
    pub fn press(&mut self, key: &str, key_code: u32) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": key_code }),
            );
        }
    }

    /// Saves a PNG of the page (`full_page`: all of it, else the viewport) to `path`.
    pub fn screenshot(&mut self, path: &Path, full_page: bool) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": full_page }),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }

    /// What went wrong in the page so far: uncaught exceptions, `console.error` calls, error
    /// log entries (a refused network request among them), dialogs (`alert`).
    pub fn problems(&mut self) -> Vec<String> {
        // Anything still in the pipe first.
        while let Ok(event) = self.from_browser.try_recv() {
            self.events.push(event);
        }
        self.events
            .iter()
            .filter_map(|e| {
                let params = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.exceptionThrown" => {
                        Some(format!("exception: {}", params["exceptionDetails"]))
                    }
                    "Runtime.consoleAPICalled"
                        if matches!(params["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(format!("console.error: {}", params["args"]))
                    }
                    "Log.entryAdded" if params["entry"]["level"] == "error" => {
                        Some(format!("log: {}", params["entry"]))
                    }
                    "Page.javascriptDialogOpening" => {
                        Some(format!("dialog: {}", params["message"]))
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Asked to close, the browser ends its renderers too; killed if it does not.
        let close = json!({ "id": 0, "method": "Browser.close" });
        let mut bytes = serde_json::to_vec(&close).unwrap_or_default();
        bytes.push(0);
        if self.to_browser.write_all(&bytes).is_ok() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    let _ = std::fs::remove_dir_all(&self.profile_dir);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile_dir);
    }
}
