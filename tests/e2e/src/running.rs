//! A kubectl that keeps running (`port-forward`, `logs -f`, `attach`, `get -w`): its output is
//! collected as it comes, so a test can wait for a line while the stream is open.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::kubectl::Kubectl;
use crate::process::indent;

/// A kubectl that keeps running (port-forward, -f, attach); its output is collected as it comes;
/// killed on drop.
pub struct Running {
    pub child: Child,
    line: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    pub fn spawn(
        k: &Kubectl,
        cache: &Path,
        args: &[&str],
        env: &BTreeMap<&str, &str>,
    ) -> Result<Self> {
        let mut cmd = Command::new(k.bin());
        cmd.arg(format!("--kubeconfig={}", k.kubeconfig().display()))
            .arg(format!("--cache-dir={}", cache.display()))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let line = format!(
            "{}kubectl {}",
            env.iter()
                .map(|(k, v)| format!("{k}={v} "))
                .collect::<String>(),
            args.join(" ")
        );
        let mut child = cmd.spawn().with_context(|| format!("starting {line}"))?;
        let stdout = collect(child.stdout.take());
        let stderr = collect(child.stderr.take());
        Ok(Self {
            child,
            line,
            stdout,
            stderr,
        })
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until stdout contains `what` (at most `timeout`); fails if the process exits first.
    pub fn wait_stdout(&mut self, what: &str, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.stdout();
            if out.contains(what) {
                return Ok(out);
            }
            if let Some(status) = self.child.try_wait()? {
                // Let the readers catch up with the last output.
                thread::sleep(Duration::from_millis(200));
                if self.stdout().contains(what) {
                    return Ok(self.stdout());
                }
                bail!(
                    "{} exited ({status}) before printing {what:?}",
                    self.report()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not print {what:?} within {timeout:?}",
                    self.report()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn report(&self) -> String {
        format!(
            "`{}`\n  stdout:\n{}\n  stderr:\n{}",
            self.line,
            indent(&self.stdout(), "    | "),
            indent(&self.stderr(), "    | ")
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect<R: Read + Send + 'static>(pipe: Option<R>) -> Arc<Mutex<String>> {
    let buf = Arc::new(Mutex::new(String::new()));
    let b = Arc::clone(&buf);
    thread::spawn(move || {
        let Some(p) = pipe else { return };
        let mut r = BufReader::new(p);
        let mut line = String::new();
        while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
            if let Ok(mut b) = b.lock() {
                b.push_str(&line);
            }
            line.clear();
        }
    });
    buf
}
