//! Running child processes with bounded waits, and small text helpers.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What a finished (or timed-out) command produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by the timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `cmd` to completion, feeding `stdin`, killing it after `timeout`.
pub fn run(cmd: &mut Command, stdin: Option<&str>, timeout: Duration) -> Result<Output> {
    let t0 = Instant::now();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", describe(cmd)))?;
    let writer = match (stdin, child.stdin.take()) {
        (Some(data), Some(mut pipe)) => {
            let data = data.to_owned();
            Some(thread::spawn(move || {
                // A child that exits early closes the pipe; that is its business, not an error here.
                let _ = pipe.write_all(data.as_bytes());
            }))
        }
        _ => None,
    };
    let out_reader = reader(child.stdout.take());
    let err_reader = reader(child.stderr.take());
    let (status, timed_out) = wait_timeout(&mut child, timeout)?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Output {
        code: status.and_then(|s| s.code()),
        stdout,
        stderr,
        timed_out,
        elapsed: t0.elapsed(),
    })
}

fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for `child` at most `timeout`; kills it when the time is up.
/// Returns the exit status (None if it had to be killed) and whether it timed out.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Result<(Option<ExitStatus>, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().context("waiting for a child process")? {
            return Ok((Some(status), false));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok((None, true));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A printable form of a command line (program and arguments, shell-quoted where needed).
pub fn describe(cmd: &Command) -> String {
    let mut s = quote(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&quote(&a.to_string_lossy()));
    }
    s
}

/// Single-quotes `s` for a POSIX shell if it contains anything but safe characters.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Splits a command line the way a POSIX shell would for words: whitespace separates words,
/// single quotes are literal, double quotes allow `\"` and `\\`, a backslash outside quotes
/// escapes the next character. No expansion of any kind.
pub fn split_words(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => bail!("unterminated single quote in: {line}"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => bail!("unterminated double quote in: {line}"),
                        },
                        Some(c) => cur.push(c),
                        None => bail!("unterminated double quote in: {line}"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => bail!("trailing backslash in: {line}"),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// The last `n` lines of a file (empty if it cannot be read).
pub fn tail_file(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => tail_lines(&String::from_utf8_lossy(&bytes), n),
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The last `n` lines of `s`.
pub fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

/// Cuts `s` to at most `max` bytes (on a char boundary), noting how much was left out.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = s[..end].to_owned();
    let _ = write!(out, "\n… ({} more bytes)", s.len() - end);
    out
}

/// Indents every line of `s` by `pad`.
pub fn indent(s: &str, pad: &str) -> String {
    s.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Field 22 of /proc/PID/stat (start time in clock ticks), used to tell a recorded process from
/// a later one that reuses its PID.
pub fn proc_start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(") ")? + 2..];
    after.split_whitespace().nth(19).map(str::to_owned)
}

/// Sends a signal with the `kill` utility (no libc in this crate).
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Polls `f` every `every` until it holds, for at most `limit`; how long that took. The error
/// names `what` and the limit.
pub fn poll_within(
    limit: Duration,
    every: Duration,
    what: &str,
    mut f: impl FnMut() -> Result<bool>,
) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        if f()? {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > limit {
            bail!("{what}: not within {limit:?}");
        }
        thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() -> Result<()> {
        assert_eq!(
            split_words(r#"patch cm a --type=json -p '[{"op":"add"}]' "x y" a\ b"#)?,
            vec![
                "patch",
                "cm",
                "a",
                "--type=json",
                "-p",
                r#"[{"op":"add"}]"#,
                "x y",
                "a b"
            ]
        );
        assert_eq!(
            split_words(r#"get ns -o jsonpath={.metadata.labels.paddock\.io/tenant}"#)?,
            vec![
                "get",
                "ns",
                "-o",
                "jsonpath={.metadata.labels.paddock.io/tenant}"
            ]
        );
        assert_eq!(
            split_words(r#"get ns -o 'jsonpath={.metadata.labels.paddock\.io/tenant}'"#)?,
            vec![
                "get",
                "ns",
                "-o",
                r"jsonpath={.metadata.labels.paddock\.io/tenant}"
            ]
        );
        assert!(split_words("a 'b").is_err());
        Ok(())
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("get"), "get");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
