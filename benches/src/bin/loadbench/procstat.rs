//! CPU time and memory of a process from /proc (Linux only).

use std::process::Command;
use std::sync::OnceLock;

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux in practice).
fn clk_tck() -> f64 {
    static TCK: OnceLock<f64> = OnceLock::new();
    *TCK.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A process watched by the harness.
#[derive(Debug, Clone, Copy)]
pub struct Proc {
    pub pid: u32,
}

impl Proc {
    /// CPU seconds used so far (user + system).
    pub fn cpu_secs(self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return 0.0;
        };
        // Fields after the command name (which may hold spaces): state is field 3, utime 14,
        // stime 15.
        let Some(pos) = stat.rfind(") ") else {
            return 0.0;
        };
        let f: Vec<&str> = stat[pos + 2..].split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        (tick(11) + tick(12)) as f64 / clk_tck()
    }

    /// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`).
    pub fn status_kib(self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    pub fn rss_kib(self) -> u64 {
        self.status_kib("VmRSS:")
    }

    pub fn hwm_kib(self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// Resets the peak RSS (VmHWM) to the current RSS; false if the kernel refused.
    pub fn reset_hwm(self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5").is_ok()
    }

    /// Open file descriptors.
    pub fn fds(self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// The soft limit on open files of this process (children inherit it).
pub fn nofile_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// The machine, for the report: cores, CPU model, RAM, load average, date.
pub fn machine() -> Vec<(String, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|k| format!("{:.1} GiB", k as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    vec![
        ("nproc".into(), cores.to_string()),
        ("CPU".into(), model),
        ("RAM".into(), mem),
        ("date".into(), date),
    ]
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
